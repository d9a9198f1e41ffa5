;;; Lifecycle (NeuSymMS IV.E): access-based promotion and time-based pruning of short-term facts.
;;; Driven by an explicit clock fact (the caller's now, from event time), never the wall clock.

(defrule promote-by-access
  (lifecycle-check)
  (policy (promote-access ?n))
  ?f <- (memory-fact (fact-id ?id) (relation ?r) (value ?v) (horizon short_term) (access-count ?a&:(>= ?a ?n)))
  =>
  (modify ?f (horizon long_term))
  (assert (engine-decision (fact-id ?id) (action promote) (rule promote-by-access) (horizon long_term)
            (reason (str-cat ?r " '" ?v "' was accessed " ?a " times (>= " ?n "): promoted to long_term")))))

(defrule prune-stale-short-term
  (lifecycle-clock (now ?now))
  (policy (ttl-ms ?ttl))
  ?f <- (memory-fact (fact-id ?id) (relation ?r) (value ?v) (horizon short_term) (access-count 0)
                     (recorded-at ?t&:(> (- ?now ?t) ?ttl)) (corrects FALSE))
  =>
  (retract ?f)
  (assert (engine-decision (fact-id ?id) (action prune) (rule prune-stale-short-term) (horizon short_term)
            (reason (str-cat ?r " '" ?v "' is short_term, never accessed, and older than the TTL of "
                             (/ ?ttl 3600000.0) " h")))))
