//! Every node's parent, indexed once per file.
//!
//! tree-sitter's `Node::parent` walks down from the root on every call, so climbing from
//! each call to its enclosing function cost depth × fan-out per step: a third of the time
//! extracting ripgrep's `crates/core/main.rs` took. One preorder walk indexes every
//! parent, and finds the deepest nesting on the way (`MAX_NESTING`).

use rustc_hash::FxHashMap;
use tree_sitter::Node;

use crate::syntax::lang::pattern::preorder;

pub(super) struct Parents<'t> {
    /// Parent by node id (a node's id is its place in the tree, however it was reached).
    of: FxHashMap<usize, Node<'t>>,
    deepest: u32,
}

impl<'t> Parents<'t> {
    pub(super) fn index(root: Node<'t>) -> Self {
        let of = FxHashMap::with_capacity_and_hasher(root.descendant_count(), Default::default());
        let mut parents = Parents { of, deepest: 0 };
        parents.add(root);
        parents
    }

    /// Indexes another tree of the same file (a macro call's body parsed as code): its
    /// root has no parent, as a file's has none; its depth counts from its own root.
    pub(super) fn add(&mut self, root: Node<'t>) {
        let mut path: Vec<Node<'t>> = Vec::new();
        let (of, deepest) = (&mut self.of, &mut self.deepest);
        preorder(root, |node, depth| {
            path.truncate(depth as usize);
            if let Some(&parent) = path.last() {
                of.insert(node.id(), parent);
            }
            path.push(node);
            *deepest = (*deepest).max(depth);
        });
    }

    /// What `node.parent()` answers, without walking down from the root.
    pub(super) fn of(&self, node: Node<'t>) -> Option<Node<'t>> {
        self.of.get(&node.id()).copied()
    }

    /// The deepest node's depth (the root's is 0).
    pub(super) fn deepest(&self) -> u32 {
        self.deepest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lang::Language;

    #[test]
    fn every_parent_is_the_one_tree_sitter_walks_to() {
        let source = "def f(x):\n    if x:\n        return g(h(x), [i for i in x])\n    return None\n\nclass C:\n    def m(self):\n        return self.f(1)\n";
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&Language::Python.grammar()).unwrap();
        let tree = parser.parse(source, None).unwrap();
        let parents = Parents::index(tree.root_node());
        let mut nodes = 0;
        let mut deepest = 0;
        preorder(tree.root_node(), |node, depth| {
            nodes += 1;
            deepest = deepest.max(depth);
            assert_eq!(parents.of(node), node.parent(), "{}", node.kind());
        });
        assert!(nodes > 40, "{nodes}");
        assert_eq!(parents.deepest(), deepest);
        assert_eq!(parents.of(tree.root_node()), None);
    }
}
