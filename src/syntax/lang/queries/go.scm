; Go facts for atlas.

(package_clause (package_identifier) @package)

; ---- definitions
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @scope
        (pointer_type (type_identifier) @scope)
        (generic_type type: (type_identifier) @scope)
        (pointer_type (generic_type type: (type_identifier) @scope))
      ]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec
  name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (function_type) (map_type) (slice_type)
         (pointer_type) (channel_type) (array_type) (generic_type)]) @def.type
(type_alias name: (type_identifier) @name) @def.type
(field_declaration name: (field_identifier) @name) @def.field
(method_elem name: (field_identifier) @name) @def.method
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))

; ---- references
(call_expression function: (identifier) @name) @ref.call
(call_expression
  function: (selector_expression operand: (_) @receiver field: (field_identifier) @name)) @ref.call
(composite_literal type: (type_identifier) @name) @ref.type
(qualified_type package: (package_identifier) @qualifier name: (type_identifier) @name) @ref.type
(type_identifier) @name @ref.type
(argument_list (identifier) @name @ref.read)
; a method value passed on as a callback (`go run(s.serve)`)
(argument_list (selector_expression operand: (_) @receiver field: (field_identifier) @name) @ref.read)

; ---- imports
(import_spec
  name: (_)? @import.alias
  path: (interpreted_string_literal) @import.module) @import

; ---- type bindings (receiver types for member calls)
(parameter_declaration name: (identifier) @binding.name type: (_) @binding.type) @binding
(field_declaration name: (field_identifier) @binding.name type: (_) @binding.type) @binding
(var_spec name: (identifier) @binding.name type: (_) @binding.type) @binding
(var_spec name: (identifier) @binding.name value: (expression_list . (_) @binding.value)) @binding
(short_var_declaration
  left: (expression_list . (identifier) @binding.name)
  right: (expression_list . (_) @binding.value)) @binding
(short_var_declaration
  left: (expression_list (identifier) @binding.name)
  right: (expression_list [(call_expression function: (_) @binding.ctor) (composite_literal type: (_) @binding.ctor) (unary_expression operand: (composite_literal type: (_) @binding.ctor))])) @binding
