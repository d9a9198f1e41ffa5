;;; Decisions out, then an empty working memory. `emit-decision` is a Python function the
;;; loader registers; it only collects. One string argument per decision ("|~|" cannot occur in
;;; a normalized value) because each callback argument costs a conversion. Cleanup runs last, so no batch leaks into the next
;;; one and no user's facts stay behind for another user.

(defrule emit-decision
  (declare (salience 200))
  ?d <- (engine-decision (seq ?s) (fact-id ?id) (action ?a) (rule ?r) (reason ?why) (category ?cat)
                         (horizon ?h) (supersedes ?sup))
  =>
  (retract ?d)
  (emit-decision (str-cat ?s "|~|" ?id "|~|" ?a "|~|" ?r "|~|" ?why "|~|" ?cat "|~|" ?h "|~|" ?sup)))

(defrule clear-candidate (declare (salience -100)) ?f <- (candidate-fact) => (retract ?f))
(defrule clear-memory-fact (declare (salience -100)) ?f <- (memory-fact) => (retract ?f))
(defrule clear-value-match (declare (salience -100)) ?f <- (value-match) => (retract ?f))
(defrule clear-negation-hit (declare (salience -100)) ?f <- (negation-hit) => (retract ?f))
(defrule clear-cursor (declare (salience -100)) ?f <- (cursor) => (retract ?f))
(defrule clear-prompt-context (declare (salience -100)) ?f <- (prompt-context) => (retract ?f))
(defrule clear-lifecycle-clock (declare (salience -100)) ?f <- (lifecycle-clock) => (retract ?f))
(defrule clear-lifecycle-check (declare (salience -100)) ?f <- (lifecycle-check) => (retract ?f))
