; JavaScript: definitions, calls, imports and constructor assignments for the Code Brain.
(class_declaration
  name: (identifier) @name
  (class_heritage (_) @base)?
  body: (class_body) @body) @definition.class

(function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition.function

(generator_function_declaration
  name: (identifier) @name
  body: (statement_block) @body) @definition.function

(method_definition
  name: (_) @name
  body: (statement_block) @body) @definition.function

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

(call_expression
  function: (_) @callee) @call

(new_expression
  constructor: (_) @callee) @call

(import_statement) @import

(variable_declarator
  name: (identifier) @target
  value: (new_expression constructor: (_) @type)) @assign

(assignment_expression
  left: (member_expression) @target
  right: (new_expression constructor: (_) @type)) @assign
