; JavaScript (and JSX) facts for atlas.

; ---- definitions
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (identifier) @name) @def.class
(method_definition name: (_) @name) @def.method
(field_definition property: [(property_identifier) (private_property_identifier)] @name) @def.field
; A field holding an arrow function is a method (`fetch = (req) => …`).
(field_definition property: [(property_identifier) (private_property_identifier)] @name value: [(arrow_function) (function_expression)]) @def.method
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression)]) @def.function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @def.variable))
(program (export_statement
  declaration: (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable)))

; ---- references
(call_expression function: (identifier) @name) @ref.call
(call_expression
  function: (member_expression object: (_) @receiver property: [(property_identifier) (private_property_identifier)] @name)) @ref.call
(new_expression constructor: (identifier) @name) @ref.call
(class_heritage (identifier) @name @ref.inherit)
(class_heritage (member_expression object: (_) @qualifier property: (property_identifier) @name) @ref.inherit)
(arguments (identifier) @name @ref.read)
; a method passed on as a callback (`setTimeout(this.flush, 10)`)
(arguments (member_expression object: (_) @receiver property: (property_identifier) @name) @ref.read)
(jsx_opening_element name: (identifier) @name @ref.call)
(jsx_self_closing_element name: (identifier) @name @ref.call)

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
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments (string (string_fragment) @import.module)))
  (#eq? @_require "require")) @import

; ---- type bindings (receiver types for member calls)
(formal_parameters (identifier) @binding.name @binding)
(variable_declarator name: (identifier) @binding.name value: (new_expression constructor: (_) @binding.ctor)) @binding
(variable_declarator name: (identifier) @binding.name value: (call_expression function: (_) @binding.ctor)) @binding
(variable_declarator name: (identifier) @binding.name value: (_) @binding.value) @binding
(variable_declarator name: (identifier) @binding.name) @binding
(field_definition property: [(property_identifier) (private_property_identifier)] @binding.name value: (new_expression constructor: (_) @binding.ctor)) @binding

; ---- re-exports (bind like imports: `export { a as b } from "./x"`, `export * from "./x"`)
(export_statement
  (export_clause (export_specifier name: (identifier) @import.name alias: (identifier)? @import.alias))
  source: (string (string_fragment) @import.module)) @import
(export_statement
  "*" @import.wildcard
  source: (string (string_fragment) @import.module)) @import
; narrowing: `if (x instanceof T)` types x as T from there on
(if_statement
  condition: (parenthesized_expression
    (binary_expression left: (identifier) @binding.name operator: "instanceof" right: (identifier) @binding.type))) @binding
