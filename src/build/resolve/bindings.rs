//! A file's import bindings (local name → target), decoded on first use when they come
//! from the memo (`resolution_cache`).
//!
//! An edit reuses nearly every file's import binding, and reads the names of few: those
//! of the files it resolves again and of the files they look through. Decoding every
//! file's names into maps was a fifth of the memo's decode on sympy (3,000 maps, 7 MB of
//! fresh pages); a memo's bindings are now kept as the bytes they were stored as, checked
//! when the memo is read, and made a map when a lookup first needs one.
//!
//! ```text
//! count(4) then count × [name-length(4) name(UTF-8) tag(1): 1 symbol(4) | 2 count(4) files(4 each)]
//! ```

use std::sync::OnceLock;

use super::{HashMap, Target};
use crate::build::stamps::Reader;

/// Import bindings: a map, or the bytes of one (checked) until first read.
#[derive(Clone, Default)]
pub struct Bindings {
    map: OnceLock<HashMap<String, Target>>,
    /// The stored form, when the bindings came from one; the map is decoded from it.
    stored: Option<Box<[u8]>>,
}

impl Bindings {
    pub fn from_map(map: HashMap<String, Target>) -> Bindings {
        Bindings {
            map: OnceLock::from(map),
            stored: None,
        }
    }

    /// The map, decoded on first use.
    pub fn map(&self) -> &HashMap<String, Target> {
        self.map.get_or_init(|| match &self.stored {
            Some(stored) => decode(stored).unwrap_or_default(),
            None => HashMap::default(),
        })
    }

    pub fn get(&self, name: &str) -> Option<&Target> {
        self.map().get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Target)> {
        self.map().iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &Target> {
        self.map().values()
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn insert(&mut self, name: String, target: Target) {
        self.map();
        self.stored = None;
        if let Some(map) = self.map.get_mut() {
            map.insert(name, target);
        }
    }

    /// The bindings with every target mapped by `target` (ids translated).
    pub fn translated(&self, target: impl Fn(&Target) -> Target) -> Bindings {
        Bindings::from_map(
            self.iter()
                .map(|(name, t)| (name.clone(), target(t)))
                .collect(),
        )
    }

    /// The stored form: the bytes read, when the map was never decoded, or the map's.
    pub fn write(&self, put: &mut impl FnMut(&[u8])) {
        if let (Some(stored), None) = (&self.stored, self.map.get()) {
            put(stored);
            return;
        }
        let map = self.map();
        put(&(map.len() as u32).to_le_bytes());
        for (name, target) in map {
            put(&(name.len() as u32).to_le_bytes());
            put(name.as_bytes());
            match target {
                Target::Symbol(id) => {
                    put(&[1]);
                    put(&id.to_le_bytes());
                }
                Target::Files(files) => {
                    put(&[2]);
                    put(&(files.len() as u32).to_le_bytes());
                    for file in files {
                        put(&file.to_le_bytes());
                    }
                }
            }
        }
    }

    /// Bindings stored at the start of `r`, checked whole (every length, name and tag)
    /// and kept as bytes; `None` when they do not hold together.
    pub(in crate::build) fn read(r: &mut Reader) -> Option<Bindings> {
        let all = r.0;
        let n = r.len_of(6)?;
        for _ in 0..n {
            let len = r.len_of(1)?;
            std::str::from_utf8(r.take(len)?).ok()?;
            match r.u8()? {
                1 => {
                    r.take(4)?;
                }
                2 => {
                    let files = r.len_of(4)?;
                    r.take(files * 4)?;
                }
                _ => return None,
            }
        }
        let stored = &all[..all.len() - r.0.len()];
        Some(Bindings {
            map: OnceLock::new(),
            stored: Some(stored.into()),
        })
    }
}

/// The map of checked stored bindings (`Bindings::read` checked them).
fn decode(stored: &[u8]) -> Option<HashMap<String, Target>> {
    let mut r = Reader(stored);
    let n = r.len_of(6)?;
    let mut map = HashMap::default();
    map.reserve(n);
    for _ in 0..n {
        let len = r.len_of(1)?;
        let name = std::str::from_utf8(r.take(len)?).ok()?.to_string();
        let target = match r.u8()? {
            1 => Target::Symbol(r.u32()?),
            2 => Target::Files(r.u32s()?),
            _ => return None,
        };
        map.insert(name, target);
    }
    Some(map)
}

impl PartialEq for Bindings {
    fn eq(&self, other: &Bindings) -> bool {
        match (&self.stored, &other.stored) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.map() == other.map(),
        }
    }
}

impl std::fmt::Debug for Bindings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.map().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_bindings_read_back_as_the_map_they_were_and_are_written_as_read() {
        let mut map = HashMap::default();
        map.insert("os".to_string(), Target::Files(vec![3, 9]));
        map.insert("path".to_string(), Target::Symbol(41));
        map.insert("ünïcode".to_string(), Target::Files(vec![]));
        let bindings = Bindings::from_map(map.clone());
        let mut bytes = Vec::new();
        bindings.write(&mut |b: &[u8]| bytes.extend_from_slice(b));
        bytes.extend_from_slice(b"after");
        let mut r = Reader(&bytes);
        let read = Bindings::read(&mut r).unwrap();
        assert_eq!(r.0, b"after", "reads exactly its own bytes");
        assert!(read.map.get().is_none(), "not decoded before first use");
        let mut again = Vec::new();
        read.write(&mut |b: &[u8]| again.extend_from_slice(b));
        assert_eq!(again, bytes[..bytes.len() - 5], "written back as read");
        assert_eq!(read.get("path"), Some(&Target::Symbol(41)));
        assert_eq!(read.map(), &map);
        assert_eq!(read, bindings);
        let moved = read.translated(|t| match t {
            Target::Symbol(id) => Target::Symbol(id + 1),
            other => other.clone(),
        });
        assert_eq!(moved.get("path"), Some(&Target::Symbol(42)));
        assert_eq!(moved.get("os"), Some(&Target::Files(vec![3, 9])));
    }

    #[test]
    fn damaged_stored_bindings_are_refused_when_read() {
        let mut map = HashMap::default();
        map.insert("name".to_string(), Target::Symbol(1));
        let mut bytes = Vec::new();
        Bindings::from_map(map).write(&mut |b: &[u8]| bytes.extend_from_slice(b));
        for cut in 0..bytes.len() {
            assert!(
                Bindings::read(&mut Reader(&bytes[..cut])).is_none(),
                "{cut}"
            );
        }
        let mut bad_tag = bytes.clone();
        bad_tag[4 + 4 + 4] = 7;
        assert!(Bindings::read(&mut Reader(&bad_tag)).is_none());
        let mut bad_text = bytes.clone();
        bad_text[8] = 0xff;
        assert!(Bindings::read(&mut Reader(&bad_text)).is_none());
    }
}
