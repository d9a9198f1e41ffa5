;;; Templates of the fact rule engine (NeuSymMS, section IV.B), plus the control facts.
;;; Values in `value` slots are normalized (lower-case, NFKC, punctuation trimmed).
;;; `key` is scope:scope-id:subject; contradiction is only ever judged within one key.

(deftemplate policy
  (slot min-confidence (type FLOAT) (default 0.3))
  (slot similarity (type FLOAT) (default 0.85))
  (slot promote-access (type INTEGER) (default 3))
  (slot ttl-ms (type INTEGER) (default 86400000)))

(deftemplate relation-policy
  (slot relation (type SYMBOL))
  (slot category (type SYMBOL))
  (slot cardinality (type SYMBOL) (allowed-symbols single multi)))

(deftemplate negation-target
  (slot negation (type SYMBOL))
  (slot target (type SYMBOL)))

;; two relations that cannot both hold of one value: stating one retracts the other (latest wins)
(deftemplate opposite
  (slot relation (type SYMBOL))
  (slot opposite (type SYMBOL)))

(deftemplate durable-category
  (slot category (type SYMBOL)))

(deftemplate memory-fact
  (slot fact-id (type STRING))
  (slot key (type STRING))
  (slot relation (type SYMBOL))
  (slot value (type STRING))
  (slot horizon (type SYMBOL) (default short_term))
  (slot access-count (type INTEGER) (default 0))
  (slot recorded-at (type INTEGER) (default 0))
  ;; it replaced an earlier value (a correction or a change): the latest word, never pruned
  (slot corrects (type SYMBOL) (allowed-symbols FALSE TRUE) (default FALSE)))

(deftemplate candidate-fact
  (slot seq (type INTEGER))
  (slot fact-id (type STRING))
  (slot key (type STRING))
  (slot relation (type SYMBOL))
  (slot value (type STRING))
  (slot confidence (type FLOAT))
  (slot category (type SYMBOL) (default unclassified))
  (slot cardinality (type SYMBOL) (default multi))
  (slot status (type SYMBOL) (default new))
  (slot supersedes (type STRING) (default ""))
  (slot superseded-horizon (type SYMBOL) (default none)))

;;; The candidate of this seq puts this active fact right: the user corrected their own words
;;; ("his name's Jack not Jake"; facts/corrections.py resolved which fact they meant).
(deftemplate correction
  (slot seq (type INTEGER))
  (slot fact-id (type STRING)))

;;; A negation candidate retracted this fact (the candidate itself is never stored).
(deftemplate negation-hit
  (slot seq (type INTEGER))
  (slot fact-id (type STRING)))

(deftemplate value-match
  (slot seq (type INTEGER))
  (slot fact-id (type STRING))
  (slot score (type FLOAT))
  (slot contains (type SYMBOL) (default FALSE)))

(deftemplate engine-decision
  (slot seq (type INTEGER) (default -1))
  (slot fact-id (type STRING))
  (slot action (type SYMBOL))
  (slot rule (type SYMBOL))
  (slot reason (type STRING))
  (slot category (type SYMBOL) (default other))
  (slot horizon (type SYMBOL) (default short_term))
  (slot supersedes (type STRING) (default "")))

(deftemplate prompt-context
  (multislot keywords)
  (slot intent (type SYMBOL) (default statement))
  (slot turn-number (type INTEGER) (default 0)))

;;; The candidate being decided: candidates are decided one at a time, in order of seq
;;; (0, 1, ...). One cursor lives in working memory for good; it is rewound after each batch.
(deftemplate cursor
  (slot seq (type INTEGER) (default 0)))

(deffacts the-cursor
  (cursor (seq 0)))

(deftemplate lifecycle-clock
  (slot now (type INTEGER)))

(deftemplate lifecycle-check
  (slot kind (type SYMBOL)))
