//! Call sites and callable shapes: where a call sits (handler, guard, result
//! carried on, returned, raised), returned names, exits, declare-only bodies, return types.

use rustc_hash::FxHashMap;

use super::parents::Parents;
use super::*;

/// Where a call sits in its function (`facts::site`): in an error handler, in the body of
/// an early-return guard, and whether its value is carried on. Walks up to the enclosing
/// function only.
pub(super) fn call_site_flags<'s, 't>(
    language: Language,
    call: Node<'t>,
    source: &'s str,
    parents: &Parents<'t>,
    returned_names: &mut ReturnedNames<'s>,
) -> u8 {
    use crate::syntax::facts::site;
    let text = |n: Node| source.get(n.byte_range()).unwrap_or("");
    let mut flags = 0;
    // The value: through `await`, parentheses, `?`.
    let mut value = call;
    while let Some(parent) = parents.of(value) {
        match parent.kind() {
            "await"
            | "await_expression"
            | "parenthesized_expression"
            | "try_expression"
            | "non_null_expression"
            | "as_expression" => value = parent,
            _ => break,
        }
    }
    if let Some(parent) = parents.of(value) {
        let kind = parent.kind();
        let returned = matches!(kind, "return_statement" | "return_expression")
            // A Rust block's tail expression, or an arrow function's expression body.
            || (kind == "block"
                && language == Language::Rust
                && parent.named_child(parent.named_child_count().saturating_sub(1) as u32)
                    == Some(value))
            || (kind == "arrow_function" || kind == "lambda")
            || (kind == "expression_list"
                && parents
                    .of(parent)
                    .is_some_and(|p| p.kind() == "return_statement"));
        let assigned_to = match kind {
            "assignment" | "assignment_expression" | "assignment_statement" => {
                parent.child_by_field_name("left")
            }
            "variable_declarator" => parent.child_by_field_name("name"),
            "let_declaration" => parent.child_by_field_name("pattern"),
            "short_var_declaration" | "var_spec" | "expression_list" => parents
                .of(parent)
                .filter(|p| p.kind() == "short_var_declaration")
                .and_then(|p| p.child_by_field_name("left"))
                .or_else(|| parent.child_by_field_name("left"))
                .or_else(|| parent.child_by_field_name("name")),
            _ => None,
        };
        // The iterable of a loop: its items are what the body works on.
        let iterated = matches!(
            kind,
            "for_statement"
                | "for_in_clause"
                | "for_in_statement"
                | "for_expression"
                | "range_clause"
        ) && parent
            .child_by_field_name("right")
            .or_else(|| parent.child_by_field_name("value"))
            .is_some_and(|n| n.id() == value.id());
        let carried = returned
            || iterated
            || assigned_to.is_some()
            || matches!(
                kind,
                "augmented_assignment"
                    | "local_variable_declaration"
                    | "argument_list"
                    | "arguments"
                    | "attribute"
                    | "member_expression"
                    | "field_expression"
                    | "selector_expression"
                    | "field_access"
                    | "method_invocation"
                    | "yield"
                    | "yield_expression"
                    | "as_pattern"
            );
        if carried {
            flags |= site::RESULT;
        }
        // The function's value comes from this call: returned, or assigned to a name the
        // function returns (`rv = self.invoke(ctx) … return rv`).
        if returned
            || assigned_to
                .map(|name| text(name).trim())
                .filter(|name| !name.is_empty())
                .is_some_and(|name| returned_names.returns(call, name, source, parents))
        {
            flags |= site::RETURNED;
        }
    }
    // Where it sits: up to the enclosing function.
    let mut child = call;
    while let Some(parent) = parents.of(child) {
        let kind = parent.kind();
        if kind.contains("function")
            || kind.contains("method")
            || kind == "lambda"
            || kind == "closure_expression"
            || kind == "arrow_function"
        {
            break;
        }
        match kind {
            "except_clause" | "finally_clause" | "catch_clause" | "finally_block" | "rescue" => {
                flags |= site::HANDLER;
            }
            "raise_statement" | "throw_statement" => flags |= site::RAISED,
            "call_expression"
                if language == Language::Go
                    && parent
                        .child_by_field_name("function")
                        .is_some_and(|f| text(f) == "panic") =>
            {
                flags |= site::RAISED;
            }
            "match_arm"
                if language == Language::Rust
                    && parent
                        .child_by_field_name("pattern")
                        .is_some_and(|p| text(p).trim_start().starts_with("Err")) =>
            {
                flags |= site::HANDLER;
            }
            "if_statement" | "if_expression" | "if_let_expression" => {
                let consequence = parent.child_by_field_name("consequence");
                if consequence.is_some_and(|c| c.id() == child.id()) {
                    let condition = parent
                        .child_by_field_name("condition")
                        .map(text)
                        .unwrap_or("");
                    if (language == Language::Go && condition.contains("err != nil"))
                        || (language == Language::Rust
                            && condition.trim_start().starts_with("let Err"))
                    {
                        flags |= site::HANDLER;
                    } else if consequence.is_some_and(|c| ends_in_exit(c))
                        && flags & site::RETURNED == 0
                    {
                        // An early exit — unless this call is the value it returns: then
                        // the branch is where the result comes from, not a detour.
                        flags |= site::GUARD;
                    }
                }
            }
            _ => {}
        }
        child = parent;
    }
    flags
}

/// The bare names each function returns (`return rv`, `return rv, err`), listed once per
/// function: asking per call walked the whole function again for every assigned call.
#[derive(Default)]
pub(super) struct ReturnedNames<'s> {
    by_function: FxHashMap<usize, Vec<&'s str>>,
}

impl<'s> ReturnedNames<'s> {
    /// Whether the function enclosing `node` returns the bare name `name` somewhere,
    /// looking at a bounded number of nodes. Code outside any function returns nothing.
    pub(super) fn returns<'t>(
        &mut self,
        node: Node<'t>,
        name: &str,
        source: &'s str,
        parents: &Parents<'t>,
    ) -> bool {
        let Some(function) = std::iter::successors(parents.of(node), |n| parents.of(*n))
            .find(|n| is_function(n.kind()))
        else {
            return false;
        };
        self.by_function
            .entry(function.id())
            .or_insert_with(|| returned_names(function, source))
            .contains(&name)
    }
}

/// Where `returns` stops climbing, and what `returned_names` does not enter: a function,
/// a method or a lambda (of any of the grammars' spellings).
fn is_function(kind: &str) -> bool {
    kind.contains("function") || kind.contains("method") || kind == "lambda"
}

/// The bare names `function` returns, among its first 20,001 nodes; the returns of the
/// functions nested in it are theirs, not its own.
fn returned_names<'s>(function: Node, source: &'s str) -> Vec<&'s str> {
    let mut names = Vec::new();
    let mut cursor = function.walk();
    let mut visited = 0;
    loop {
        let current = cursor.node();
        visited += 1;
        let nested = current.id() != function.id() && is_function(current.kind());
        if matches!(current.kind(), "return_statement" | "return_expression") {
            let returned = source.get(current.byte_range()).unwrap_or("");
            let value = returned
                .trim_start_matches("return")
                .trim()
                .trim_end_matches(';');
            let first = value.split(',').next().unwrap_or("").trim();
            // `return rv` or `return rv, err`; not `return rv.other()`, whose value comes
            // from another call (that text names no variable, so it never matches one).
            names.push(value);
            if first != value {
                names.push(first);
            }
        }
        if visited > 20_000 {
            return names;
        }
        if !nested && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return names;
            }
        }
    }
}

/// Whether a block's last statement leaves it (`return`, `raise`, `throw`, `continue`,
/// `break`): the block is an early exit.
pub(super) fn ends_in_exit(block: Node) -> bool {
    let last = match block.named_child_count() {
        0 => block,
        n => block.named_child((n - 1) as u32).unwrap_or(block),
    };
    let kind = last.kind();
    let exit = |k: &str| {
        matches!(
            k,
            "return_statement"
                | "raise_statement"
                | "throw_statement"
                | "continue_statement"
                | "break_statement"
                | "return_expression"
                | "continue_expression"
                | "break_expression"
        )
    };
    exit(kind)
        || (kind == "expression_statement" && last.named_child(0).is_some_and(|c| exit(c.kind())))
}

/// Whether a callable only declares what overrides define: no body (an abstract or
/// interface signature), `@abstractmethod`/`abstract`, or a body of nothing but a
/// docstring, `pass`, `...` and `raise NotImplementedError`.
pub(super) fn declares_only(node: Node, outer: Node, source: &str) -> bool {
    let text = |n: Node| source.get(n.byte_range()).unwrap_or("");
    if matches!(
        node.kind(),
        "abstract_method_signature" | "method_signature" | "function_signature_item"
    ) {
        return true;
    }
    let mut walk = outer.walk();
    let decorated = outer
        .children(&mut walk)
        .any(|c| c.kind() == "decorator" && text(c).contains("abstractmethod"));
    if decorated {
        return true;
    }
    let Some(body) = node.child_by_field_name("body") else {
        // A method signature without a body (Java `abstract`, TypeScript overloads).
        return node.kind().contains("method");
    };
    let mut walk = body.walk();
    let mut statements = 0;
    for statement in body.named_children(&mut walk) {
        let inner = if statement.kind() == "expression_statement" {
            statement.named_child(0).unwrap_or(statement)
        } else {
            statement
        };
        let declares = match inner.kind() {
            "comment" | "string" | "pass_statement" | "ellipsis" => true,
            "raise_statement" | "throw_statement" => text(inner).contains("NotImplemented"),
            _ => false,
        };
        if !declares {
            return false;
        }
        statements += 1;
    }
    // An empty body (`{}`) is a no-op that runs, not a declaration.
    statements > 0
}

/// A function's declared return type as written (clipped), from the grammar's field:
/// Python, Rust, TypeScript `return_type`, Go `result`, Java `type`.
pub(super) fn return_type(node: Node, language: Language, source: &str) -> Option<String> {
    // A function held by a name (`const f = (x): T => …`, a field `f = function (): T {…}`)
    // declares its return type on the function.
    let node = match node.child_by_field_name("value").filter(|v| {
        matches!(
            v.kind(),
            "arrow_function" | "function_expression" | "function"
        )
    }) {
        Some(function) => function,
        None => node,
    };
    let field = match language {
        Language::Go => "result",
        Language::Java => "type",
        Language::JavaScript => return None,
        _ => "return_type",
    };
    let text = source.get(node.child_by_field_name(field)?.byte_range())?;
    let text = text
        .trim()
        .trim_start_matches(':')
        .trim_start_matches("->")
        .trim();
    (!text.is_empty()).then(|| text.chars().take(MAX_AUX_TEXT).collect())
}
