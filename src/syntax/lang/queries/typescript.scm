; TypeScript and TSX facts for atlas (TSX uses this file too).

; ---- definitions
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(function_signature name: (identifier) @name) @def.function
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(method_definition name: (_) @name) @def.method
(method_signature name: (_) @name) @def.method
(abstract_method_signature name: (_) @name) @def.method
(public_field_definition name: (_) @name) @def.field
; A field holding an arrow function is a method (`fetch = (req) => …`).
(public_field_definition name: (_) @name value: [(arrow_function) (function_expression)]) @def.method
(property_signature name: (_) @name) @def.field
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression)]) @def.function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @def.variable))
(program (export_statement
  declaration: (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable)))
(internal_module name: (_) @name) @def.module

; ---- references
(call_expression function: (identifier) @name) @ref.call
(call_expression
  function: (member_expression object: (_) @receiver property: [(property_identifier) (private_property_identifier)] @name)) @ref.call
(new_expression constructor: (identifier) @name) @ref.call
(extends_clause value: (identifier) @name @ref.inherit)
(extends_clause value: (member_expression object: (_) @qualifier property: (property_identifier) @name) @ref.inherit)
(implements_clause (type_identifier) @name @ref.implement)
(implements_clause (generic_type name: (type_identifier) @name) @ref.implement)
(extends_type_clause type: (type_identifier) @name @ref.inherit)
(extends_type_clause type: (generic_type name: (type_identifier) @name) @ref.inherit)
(type_annotation (type_identifier) @name @ref.type)
(type_annotation (generic_type name: (type_identifier) @name) @ref.type)
(type_arguments (type_identifier) @name @ref.type)
(union_type (type_identifier) @name @ref.type)
(arguments (identifier) @name @ref.read)
; a method passed on as a callback (`setTimeout(this.flush, 10)`)
(arguments (member_expression object: (_) @receiver property: (property_identifier) @name) @ref.read)

; ---- imports
(import_statement
  (import_clause (identifier) @import.default)
  source: (string (string_fragment) @import.module)) @import
(import_statement
  (import_clause (named_imports (import_specifier name: (identifier) @import.name alias: (identifier)? @import.alias)))
  source: (string (string_fragment) @import.module)) @import
(import_statement
  (import_clause (namespace_import (identifier) @import.alias))
  source: (string (string_fragment) @import.module)) @import

; ---- type bindings (receiver types for member calls)
(required_parameter pattern: (identifier) @binding.name type: (type_annotation (_) @binding.type)) @binding
(optional_parameter pattern: (identifier) @binding.name type: (type_annotation (_) @binding.type)) @binding
(required_parameter pattern: (identifier) @binding.name) @binding
(variable_declarator name: (identifier) @binding.name type: (type_annotation (_) @binding.type)) @binding
(variable_declarator name: (identifier) @binding.name value: (new_expression constructor: (_) @binding.ctor)) @binding
(variable_declarator name: (identifier) @binding.name value: (call_expression function: (_) @binding.ctor)) @binding
(variable_declarator name: (identifier) @binding.name value: (_) @binding.value) @binding
(variable_declarator name: (identifier) @binding.name) @binding
(public_field_definition name: [(property_identifier) (private_property_identifier)] @binding.name type: (type_annotation (_) @binding.type)) @binding
(public_field_definition name: [(property_identifier) (private_property_identifier)] @binding.name value: (new_expression constructor: (_) @binding.ctor)) @binding

; ---- re-exports (bind like imports: `export { a as b } from "./x"`, `export * from "./x"`)
(export_statement
  (export_clause (export_specifier name: (identifier) @import.name alias: (identifier)? @import.alias))
  source: (string (string_fragment) @import.module)) @import
(export_statement
  "*" @import.wildcard
  source: (string (string_fragment) @import.module)) @import
(export_statement
  (namespace_export (identifier) @import.alias)
  source: (string (string_fragment) @import.module)) @import
; narrowing: `if (x instanceof T)` types x as T from there on
(if_statement
  condition: (parenthesized_expression
    (binary_expression left: (identifier) @binding.name operator: "instanceof" right: (identifier) @binding.type))) @binding
