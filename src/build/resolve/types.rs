//! Receiver and value types: what a receiver, binding, value text, collection item
//! or call evaluates to, so that `x.method()` binds through the type of `x`.

use super::*;

impl<'a> Resolver<'a> {
    /// The type of a member-call receiver: `Some(Ok(type))` when the graph proves it,
    /// `Some(Err(()))` when the receiver is a known name of unknown or outside type
    /// (decisive: an unknown member on it is frontier), `None` when the receiver is not
    /// something we know. Receivers are typed from declarations, constructors, and the
    /// declared return types of the calls that produced them (`a = self.get_adapter(u)`,
    /// `with make() as v`, `for p in params()`, `Foo::builder().port(1)`).
    pub(super) fn receiver_type(
        &self,
        file: u32,
        facts: &'a FileFacts,
        locals: &Locals<'a>,
        r: &Reference,
        receiver: &str,
    ) -> Option<Result<u32, ()>> {
        let _depth = DepthGuard::enter()?;
        let receiver = strip_value_noise(receiver);
        if is_call_text(receiver) {
            // A call's value: typed through its target's return type, else unknown.
            return self
                .call_type(file, facts, locals, r.from, receiver, false)
                .map(Ok);
        }
        // A chain of fields (`c.echo.Binder`, `self.app.router`): each hop types the next.
        if let Some((base, fields)) = receiver.split_once('.')
            && fields.contains('.') | !matches!(base, "self" | "this")
        {
            let mut current = if matches!(base, "self" | "this") {
                let owner = self.enclosing_type(facts, r.from)?;
                self.type_named(file, owner)?
            } else {
                match self.receiver_type(file, facts, locals, r, base)? {
                    Ok(ty) => ty,
                    Err(()) => return Some(Err(())),
                }
            };
            for field in fields.split('.') {
                let owner = self.member_scope_of(current);
                let (binding, binding_file) = self.field_type(owner, field)?;
                current = match self.binding_type(binding_file, binding) {
                    Ok(ty) => ty,
                    Err(()) => return Some(Err(())),
                };
            }
            return Some(Ok(current));
        }
        let binding = if let Some(field) = receiver
            .strip_prefix("self.")
            .or_else(|| receiver.strip_prefix("this."))
        {
            if field.contains('.') {
                return None;
            }
            let owner = self.enclosing_type(facts, r.from)?;
            let (binding, binding_file) = self.field_type(owner, field)?;
            return Some(self.binding_type(binding_file, binding));
        } else {
            if !receiver
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            {
                return None;
            }
            local_binding(locals, facts, r.from, receiver, r.site.start_byte)?
        };
        Some(self.binding_type(file, binding))
    }

    /// The type a binding of `file` holds: declared, constructed, or the (element of the)
    /// value its initialiser returns.
    pub(super) fn binding_type(
        &self,
        file: u32,
        binding: &crate::syntax::facts::TypeBinding,
    ) -> Result<u32, ()> {
        if let Some(found) = binding
            .type_name
            .as_deref()
            .and_then(|t| self.type_named(file, t))
            .or_else(|| {
                binding
                    .initializer
                    .as_deref()
                    .and_then(|c| self.type_named(file, c))
                    .filter(|_| !binding.element)
            })
        {
            return Ok(found);
        }
        let Some(value) = binding.value.as_deref() else {
            return Err(());
        };
        let Some(_depth) = DepthGuard::enter() else {
            return Err(());
        };
        if binding.element {
            // The items of the value (`for route in self.routes`, `for p in params()`).
            return self
                .items_type(file, binding.value_scope, value, binding.site.start_byte)
                .ok_or(());
        }
        self.value_type(file, binding.value_scope, binding.site, value)
    }

    /// The type of a value's text evaluated in `scope`: a cast, a call's return type,
    /// another name's type, the first typed branch of a conditional.
    pub(super) fn value_type(
        &self,
        file: u32,
        scope: Option<u32>,
        site: Span,
        value: &str,
    ) -> Result<u32, ()> {
        let Some(facts) = self.facts(file) else {
            return Err(());
        };
        let Some(_depth) = DepthGuard::enter() else {
            return Err(());
        };
        let value = strip_value_noise(value);
        let branches = value_branches(value);
        if branches != [value] {
            return branches
                .into_iter()
                .find_map(|branch| self.value_type(file, scope, site, branch).ok())
                .ok_or(());
        }
        if let Some(asserted) = asserted_type(value) {
            return self.type_named(file, asserted).ok_or(());
        }
        if is_call_text(value) {
            return self
                .call_type(file, facts, self.locals_of(file), scope, value, false)
                .ok_or(());
        }
        // An alias of another name (`self.app = app`, `x = y`): that name's type.
        let probe = Reference {
            role: RefRole::Read,
            name: value.to_string(),
            receiver: None,
            qualifier: None,
            site,
            from: scope,
            site_flags: 0,
        };
        match self.receiver_type(file, facts, self.locals_of(file), &probe, value) {
            Some(result) => result,
            None => self.type_named(file, value).ok_or(()),
        }
    }

    /// The type of the items of a collection expression: a name or field declared as a
    /// collection (`routes: Sequence[Route]`), a call returning one, a conversion that
    /// keeps the items (`list(x)`, `sorted(x)`), either branch of a conditional
    /// (`[] if x is None else list(x)`), through the bindings that hold it.
    pub(super) fn items_type(
        &self,
        file: u32,
        scope: Option<u32>,
        text: &str,
        at: u32,
    ) -> Option<u32> {
        let _depth = DepthGuard::enter()?;
        let facts = self.facts(file)?;
        let text = strip_value_noise(text);
        let branches = value_branches(text);
        if branches != [text] {
            return branches
                .into_iter()
                .find_map(|branch| self.items_type(file, scope, branch, at));
        }
        if let Some(callee) = callee_of(text) {
            if ITEM_PRESERVING.contains(&callee) {
                let argument = first_of_tuple(arguments_of(text)?);
                return self.items_type(file, scope, argument, at);
            }
            return self.call_type(file, facts, self.locals_of(file), scope, text, true);
        }
        let (binding, binding_file) = self.binding_of(file, facts, scope, text, at)?;
        if let Some(items) = binding.items.as_deref() {
            return self.type_named(binding_file, items);
        }
        let value = binding.value.as_deref().filter(|_| !binding.element)?;
        self.items_type(
            binding_file,
            binding.value_scope,
            value,
            binding.site.start_byte,
        )
    }

    /// The binding a bare name or a `self.`/`this.` field denotes in `scope` at byte `at`.
    pub(super) fn binding_of(
        &self,
        file: u32,
        facts: &'a FileFacts,
        scope: Option<u32>,
        name: &str,
        at: u32,
    ) -> Option<(&'a crate::syntax::facts::TypeBinding, u32)> {
        if let Some(field) = name
            .strip_prefix("self.")
            .or_else(|| name.strip_prefix("this."))
        {
            let owner = self.enclosing_type(facts, scope)?;
            return self.field_type(owner, field);
        }
        if !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            return None;
        }
        local_binding(self.locals_of(file), facts, scope, name, at).map(|b| (b, file))
    }

    /// A file's bindings by (scope, name), built once per file (typing a value may visit
    /// any file).
    pub(super) fn locals_of(&self, file: u32) -> &Locals<'a> {
        self.locals[file as usize].get_or_init(|| {
            let mut locals: Locals = HashMap::default();
            for binding in self.type_bindings(file) {
                locals
                    .entry((binding.scope, binding.name.as_str()))
                    .or_default()
                    .push(binding);
            }
            for list in locals.values_mut() {
                list.sort_by_key(|b| b.site.start_byte);
            }
            locals
        })
    }

    /// The type a call expression (`callee(args)`) evaluates to, from its target's declared
    /// return type (`Self` is the target's own type); `element` takes the element of a
    /// collection type (`list[Param]` → `Param`). A type called like a function
    /// constructs itself.
    pub(super) fn call_type(
        &self,
        file: u32,
        facts: &'a FileFacts,
        locals: &Locals<'a>,
        scope: Option<u32>,
        text: &str,
        element: bool,
    ) -> Option<u32> {
        let callee = callee_of(text)?;
        let (receiver, name) = match callee.rfind(['.', ':']) {
            Some(at) => (
                Some(callee[..at].trim_end_matches(':').to_string()),
                &callee[at + 1..],
            ),
            None => (None, callee),
        };
        if name.is_empty() {
            return None;
        }
        if receiver.is_none()
            && !element
            && let Some(ty) = self.type_named(file, name)
        {
            return Some(ty);
        }
        // `Type::f` is a path; `a::b().c` is a call on a receiver.
        let qualified = callee
            .rfind(['.', ':'])
            .is_some_and(|at| callee.as_bytes()[at] == b':');
        let probe = Reference {
            role: RefRole::Call,
            name: name.to_string(),
            receiver: if qualified { None } else { receiver.clone() },
            qualifier: if qualified { receiver } else { None },
            site: Span::default(),
            from: scope,
            site_flags: 0,
        };
        let language = self.language(file)?;
        let target = self
            .resolve_reference(file, language, facts, locals, &probe)
            .ok()?
            .target;
        let node = &self.node(target);
        if node.kind.is_type() && !element {
            return Some(target);
        }
        let target_file = node.file?;
        let def = self
            .facts(target_file)?
            .defs
            .get((target - self.def_base[target_file as usize]) as usize)?;
        let returns = def.returns.as_deref()?;
        let name = if element {
            collection_items(returns)?
        } else {
            crate::syntax::extract::normalize_type(first_of_tuple(returns))?
        };
        if name == "Self" || name == "self" || name == "this" {
            let owner = self.enclosing_type(
                self.facts(target_file)?,
                Some(target - self.def_base[target_file as usize]),
            )?;
            return self.type_named(target_file, owner);
        }
        self.type_named(target_file, &name)
    }
}
