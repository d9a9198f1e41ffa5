;;; Decisions out, then an empty working memory. After a run the loader calls
;;; `collect-decisions` once: it packs every engine-decision, in the order the rules made them,
;;; into one string ("|~|" between fields, "|#|" after each decision; neither can occur in a
;;; normalized value) and retracts them. One call per batch instead of one callback per decision.
;;; Cleanup runs last, so no batch leaks into the next one and no user's facts stay behind for
;;; another user.

(deffunction collect-decisions ()
  (bind ?out "")
  (do-for-all-facts ((?d engine-decision)) TRUE
    (bind ?out (str-cat ?out ?d:seq "|~|" ?d:fact-id "|~|" ?d:action "|~|" ?d:rule "|~|" ?d:reason "|~|"
                        ?d:category "|~|" ?d:horizon "|~|" ?d:supersedes "|#|"))
    (retract ?d))
  ?out)

(defrule clear-candidate (declare (salience -100)) ?f <- (candidate-fact) => (retract ?f))
(defrule clear-memory-fact (declare (salience -100)) ?f <- (memory-fact) => (retract ?f))
(defrule clear-value-match (declare (salience -100)) ?f <- (value-match) => (retract ?f))
(defrule clear-correction (declare (salience -100)) ?f <- (correction) => (retract ?f))
(defrule clear-negation-hit (declare (salience -100)) ?f <- (negation-hit) => (retract ?f))
(defrule clear-prompt-context (declare (salience -100)) ?f <- (prompt-context) => (retract ?f))
(defrule clear-lifecycle-clock (declare (salience -100)) ?f <- (lifecycle-clock) => (retract ?f))
(defrule clear-lifecycle-check (declare (salience -100)) ?f <- (lifecycle-check) => (retract ?f))
