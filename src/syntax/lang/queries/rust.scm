; Rust facts for atlas.

; ---- definitions
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(union_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(enum_variant name: (identifier) @name) @def.constant
(trait_item name: (type_identifier) @name) @def.interface
(impl_item trait: (_) @trait type: (_) @scope) @def.impl
(impl_item !trait type: (_) @scope) @def.impl
(type_item name: (type_identifier) @name) @def.type
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.constant
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(field_declaration name: (field_identifier) @name) @def.field

; Test code: an item under `#[cfg(test)]`, and a `#[test]` function (also `#[tokio::test]`
; and the like), each with up to two more attributes after that one.
((attribute_item (attribute (identifier) @_cfg arguments: (token_tree (identifier) @_test)))
  .
  [(mod_item) (function_item) (impl_item) (struct_item) (enum_item) (trait_item) (const_item)
   (static_item) (type_item) (macro_definition)] @test.scope
  (#eq? @_cfg "cfg")
  (#eq? @_test "test"))
((attribute_item (attribute (identifier) @_cfg arguments: (token_tree (identifier) @_test)))
  .
  (attribute_item)
  .
  [(mod_item) (function_item) (impl_item) (struct_item) (enum_item) (trait_item) (const_item)
   (static_item) (type_item) (macro_definition)] @test.scope
  (#eq? @_cfg "cfg")
  (#eq? @_test "test"))
((attribute_item (attribute (identifier) @_cfg arguments: (token_tree (identifier) @_test)))
  .
  (attribute_item)
  .
  (attribute_item)
  .
  [(mod_item) (function_item) (impl_item) (struct_item) (enum_item) (trait_item) (const_item)
   (static_item) (type_item) (macro_definition)] @test.scope
  (#eq? @_cfg "cfg")
  (#eq? @_test "test"))
((attribute_item (attribute [(identifier) @_test (scoped_identifier name: (identifier) @_test)]))
  .
  (function_item) @test.scope
  (#eq? @_test "test"))
((attribute_item (attribute [(identifier) @_test (scoped_identifier name: (identifier) @_test)]))
  .
  (attribute_item)
  .
  (function_item) @test.scope
  (#eq? @_test "test"))
((attribute_item (attribute [(identifier) @_test (scoped_identifier name: (identifier) @_test)]))
  .
  (attribute_item)
  .
  (attribute_item)
  .
  (function_item) @test.scope
  (#eq? @_test "test"))

; ---- references
(call_expression function: (identifier) @name) @ref.call
(call_expression
  function: (field_expression value: (_) @receiver field: (field_identifier) @name)) @ref.call
(call_expression
  function: (scoped_identifier path: (_) @qualifier name: (identifier) @name)) @ref.call
(call_expression function: (generic_function function: (identifier) @name)) @ref.call
(call_expression
  function: (generic_function
    function: (scoped_identifier path: (_) @qualifier name: (identifier) @name))) @ref.call
(call_expression
  function: (generic_function
    function: (field_expression value: (_) @receiver field: (field_identifier) @name))) @ref.call
(macro_invocation macro: (identifier) @name) @ref.call
(scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name) @ref.type
(type_identifier) @name @ref.type
(arguments (identifier) @name @ref.read)

; ---- imports
(use_declaration argument: (_) @import.tree) @import
; `extern crate a as b;`: a facade crate's root re-exports crates whole this way.
(extern_crate_declaration name: (identifier) @import.module alias: (identifier)? @import.alias) @import

; ---- type bindings (receiver types for member calls)
(parameter pattern: (identifier) @binding.name type: (_) @binding.type) @binding
(let_declaration pattern: (identifier) @binding.name type: (_) @binding.type) @binding
(let_declaration
  pattern: (identifier) @binding.name
  value: (call_expression function: (scoped_identifier path: (_) @binding.ctor))) @binding
(let_declaration pattern: (identifier) @binding.name value: (struct_expression name: (_) @binding.ctor)) @binding
(let_declaration pattern: (identifier) @binding.name) @binding
(let_declaration pattern: (identifier) @binding.name value: (_) @binding.value) @binding
(field_declaration name: (field_identifier) @binding.name type: (_) @binding.type) @binding
