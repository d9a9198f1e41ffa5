;;; Phases 2-4: filters, negation, contradiction and storage (NeuSymMS IV.D-E).
;;; Candidates are decided one at a time in batch order (the cursor), so a later candidate
;;; sees what an earlier one in the same batch stored or retracted: latest wins. A decided
;;; candidate is retracted, which moves the cursor on.

(defrule drop-low-confidence
  (declare (salience 80))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified|negation) (fact-id ?id) (category ?cat)
                        (relation ?r) (value ?v) (confidence ?conf))
  (policy (min-confidence ?min))
  (test (< ?conf ?min))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?id) (action drop) (rule drop-low-confidence) (category ?cat)
            (reason (str-cat ?r " '" ?v "': confidence " ?conf " is below the minimum " ?min)))))

(defrule drop-empty-value
  (declare (salience 79))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (fact-id ?id) (category ?cat) (relation ?r) (value ""))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?id) (action drop) (rule drop-empty-value) (category ?cat)
            (reason (str-cat ?r " has no value: nothing to store")))))

;;; A user's correction of their own words ("his name's Jack not Jake"): the fact that said the wrong
;;; value is retracted, and the candidate that puts it right replaces it. One that meets no active
;;; fact is dropped (facts/corrections.py resolves which fact a correction means).
(defrule correct-a-value
  (declare (salience 77))
  ?x <- (correction (seq ?s) (fact-id ?old))  ; first: a batch without a correction builds no partial match
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (relation ?r) (value ?v) (superseded-horizon ?sh))
  ?f <- (memory-fact (fact-id ?old) (relation ?mr) (value ?mv) (horizon ?h))
  =>
  (retract ?x ?f)
  (modify ?c (supersedes ?old) (superseded-horizon (if (eq ?sh long_term) then long_term else ?h)))
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule correct-a-value) (horizon ?h)
            (reason (str-cat ?mr " '" ?mv "' was said by mistake: corrected to " ?r " '" ?v "'")))))

(defrule drop-unresolved-correction
  (declare (salience 81))
  ?c <- (candidate-fact (seq ?s) (relation corrected) (fact-id ?id) (value ?v))
  (cursor (seq ?s))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?id) (action drop) (rule drop-unresolved-correction) (category other)
            (reason (str-cat "a correction to '" ?v "' meets no active fact that said otherwise")))))

(defrule skip-exact-duplicate
  (declare (salience 75))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v) (category ?cat))
  (memory-fact (fact-id ?old) (key ?k) (relation ?r) (value ?v) (horizon ?h))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?old) (action skip_duplicate) (rule skip-exact-duplicate)
            (category ?cat) (horizon ?h)
            (reason (str-cat ?r " '" ?v "' is already an active fact")))))

(defrule skip-near-duplicate
  (declare (salience 65))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v) (category ?cat))
  (policy (similarity ?t))
  (memory-fact (fact-id ?old) (key ?k) (relation ?r) (value ?mv) (horizon ?h))
  (value-match (seq ?s) (fact-id ?old) (score ?sc&:(>= ?sc ?t)))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?old) (action skip_duplicate) (rule skip-near-duplicate)
            (category ?cat) (horizon ?h)
            (reason (str-cat ?r " '" ?v "' is a near-duplicate of '" ?mv "' (similarity "
                             (format nil "%.2f" ?sc) " >= " ?t ")")))))

(defrule retract-negated-fact
  (declare (salience 60))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status negation) (relation ?n) (value ?v&~""))
  (policy (similarity ?t))
  ?f <- (memory-fact (fact-id ?old) (relation ?r) (value ?mv) (horizon ?h))
  (value-match (seq ?s) (fact-id ?old) (score ?sc) (contains ?in))
  (test (or (>= ?sc ?t) (eq ?in TRUE)))
  =>
  (retract ?f)
  (assert (negation-hit (seq ?s) (fact-id ?old)))
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule retract-negated-fact) (horizon ?h)
            (reason (str-cat ?n " '" ?v "' negates " ?r " '" ?mv "'")))))

(defrule retract-negated-relation
  (declare (salience 60))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status negation) (key ?k) (relation ?n) (value ""))
  (negation-target (negation ?n) (target ?r&~ANY))
  ?f <- (memory-fact (fact-id ?old) (key ?k) (relation ?r) (value ?mv) (horizon ?h))
  =>
  (retract ?f)
  (assert (negation-hit (seq ?s) (fact-id ?old)))
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule retract-negated-relation) (horizon ?h)
            (reason (str-cat ?n " (no value) negates every " ?r ": '" ?mv "'")))))

(defrule consume-matched-negation
  (declare (salience 55))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status negation))
  (exists (negation-hit (seq ?s)))
  =>
  (retract ?c))

(defrule drop-unmatched-negation
  (declare (salience 55))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status negation) (fact-id ?id) (relation ?n) (value ?v))
  (not (negation-hit (seq ?s)))
  =>
  (retract ?c)
  (assert (engine-decision (seq ?s) (fact-id ?id) (action drop) (rule drop-unmatched-negation) (category other)
            (reason (str-cat ?n " '" ?v "' matches no active fact; negations are never stored")))))

(defrule retract-opposite
  (declare (salience 52))
  (cursor (seq ?s))
  (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v))
  (opposite (relation ?r) (opposite ?o))
  (policy (similarity ?t))
  ?f <- (memory-fact (fact-id ?old) (key ?k) (relation ?o) (value ?mv) (horizon ?h))
  (value-match (seq ?s) (fact-id ?old) (score ?sc&:(>= ?sc ?t)))
  =>
  (retract ?f)
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule retract-opposite) (horizon ?h)
            (reason (str-cat ?r " '" ?v "' contradicts " ?o " '" ?mv "' (the latest statement wins)")))))

(defrule refine-with-a-name
  (declare (salience 51))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (key ?k) (relation ?r) (value ?v) (superseded-horizon ?sh))
  ?f <- (memory-fact (fact-id ?old) (key ?k) (relation ?r) (value ?mv&~?v) (horizon ?h))
  (test (eq (str-index (str-cat ?mv " named ") ?v) 1))
  =>
  (retract ?f)
  (modify ?c (supersedes ?old) (superseded-horizon (if (eq ?sh long_term) then long_term else ?h)))
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule refine-with-a-name) (horizon ?h)
            (reason (str-cat ?r " '" ?mv "' has a name now: '" ?v "'")))))

(defrule replace-single-valued
  (declare (salience 50))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (cardinality single) (key ?k) (relation ?r) (value ?v)
                        (superseded-horizon ?sh))
  ?f <- (memory-fact (fact-id ?old) (key ?k) (relation ?r) (value ?mv) (horizon ?h))
  =>
  (retract ?f)
  (modify ?c (supersedes ?old) (superseded-horizon (if (eq ?sh long_term) then long_term else ?h)))
  (assert (engine-decision (seq ?s) (fact-id ?old) (action retract) (rule replace-single-valued) (horizon ?h)
            (reason (str-cat ?r " '" ?mv "' is superseded by '" ?v "' (single-valued: latest wins)")))))

(defrule keep-event-date
  (declare (salience 41))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (fact-id ?id) (key ?k) (relation ?r) (value ?v)
                        (category ?cat) (supersedes ?sup))
  (test (and (> (str-length ?r) 5) (eq (sub-string (- (str-length ?r) 4) (str-length ?r) ?r) "_date")))
  =>
  (retract ?c)
  (assert (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?v) (horizon long_term)))
  (assert (engine-decision (seq ?s) (fact-id ?id) (action (if (eq ?sup "") then store else replace))
            (rule keep-event-date) (category ?cat) (horizon long_term) (supersedes ?sup)
            (reason (str-cat ?r " '" ?v "' is the date of a named event: kept as long_term until it changes")))))

(defrule promote-by-category
  (declare (salience 40))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (fact-id ?id) (key ?k) (relation ?r) (value ?v)
                        (category ?cat) (supersedes ?sup))
  (durable-category (category ?cat))
  =>
  (retract ?c)
  (assert (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?v) (horizon long_term)))
  (assert (engine-decision (seq ?s) (fact-id ?id) (action (if (eq ?sup "") then store else replace))
            (rule promote-by-category) (category ?cat) (horizon long_term) (supersedes ?sup)
            (reason (str-cat ?cat " facts are durable: " ?r " '" ?v "' stored as long_term")))))

(defrule keep-correction-long-term
  (declare (salience 39))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (fact-id ?id) (key ?k) (relation ?r) (value ?v)
                        (category ?cat) (supersedes ?sup) (superseded-horizon long_term))
  =>
  (retract ?c)
  (assert (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?v) (horizon long_term) (corrects TRUE)))
  (assert (engine-decision (seq ?s) (fact-id ?id) (action replace) (rule keep-correction-long-term)
            (category ?cat) (horizon long_term) (supersedes ?sup)
            (reason (str-cat ?r " '" ?v "' corrects a long_term fact: stored as long_term")))))

(defrule store-short-term
  (declare (salience 38))
  (cursor (seq ?s))
  ?c <- (candidate-fact (seq ?s) (status classified) (fact-id ?id) (key ?k) (relation ?r) (value ?v)
                        (category ?cat) (supersedes ?sup))
  (policy (promote-access ?n))
  =>
  (retract ?c)
  (assert (memory-fact (fact-id ?id) (key ?k) (relation ?r) (value ?v) (horizon short_term)
                       (corrects (if (eq ?sup "") then FALSE else TRUE))))
  (assert (engine-decision (seq ?s) (fact-id ?id) (action (if (eq ?sup "") then store else replace))
            (rule store-short-term) (category ?cat) (horizon short_term) (supersedes ?sup)
            (reason (str-cat ?cat " facts start short_term: " ?r " '" ?v "' (promoted after " ?n " accesses)")))))

(defrule advance-cursor
  (declare (salience -10))
  ?k <- (cursor (seq ?s))
  (not (candidate-fact (seq ?s)))
  (exists (candidate-fact (seq ?n&:(> ?n ?s))))
  =>
  (modify ?k (seq (+ ?s 1))))

(defrule rewind-cursor
  (declare (salience -100))
  ?k <- (cursor (seq ?s&~0))
  (not (candidate-fact))
  =>
  (modify ?k (seq 0)))
