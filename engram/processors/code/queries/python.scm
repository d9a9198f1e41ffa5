; Python: definitions, calls, imports and constructor assignments for the Code Brain.
(class_definition
  name: (identifier) @name
  superclasses: (argument_list)? @bases
  body: (block) @body) @definition.class

(function_definition
  name: (identifier) @name
  body: (block) @body) @definition.function

(call
  function: (_) @callee) @call

(import_statement) @import

(import_from_statement) @import

(assignment
  left: [(identifier) (attribute)] @target
  right: (call function: [(identifier) (attribute)] @type)) @assign

(future_import_statement) @import
