; Go: type and function declarations, calls, imports and composite literals for the Code Brain.
(type_declaration
  (type_spec
    name: (type_identifier) @name
    type: [(struct_type) (interface_type)] @body) @definition.class)

(function_declaration
  name: (identifier) @name
  body: (block) @body) @definition.function

(method_declaration
  receiver: (parameter_list) @receiver
  name: (field_identifier) @name
  body: (block) @body) @definition.function

(call_expression
  function: (_) @callee) @call

(import_spec) @import

(package_clause (package_identifier) @package)

(short_var_declaration
  left: (expression_list . (identifier) @target)
  right: (expression_list . [(composite_literal type: (type_identifier) @type)
                             (unary_expression operand: (composite_literal type: (type_identifier) @type))])) @assign
