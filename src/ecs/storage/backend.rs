//! The one table of backends: [`Backend`], its names, [`AnyPool`] and the layout types are generated from it.

use super::{BTreePool, DirectArray, HashPool, Layout, SparseSet};
use std::fmt;
use std::str::FromStr;

/// Generates, from one list of backends, the [`Backend`] enum with `ALL`, `name`, `label` and `pool_layout`,
/// the [`PoolLayout`] and `AnyPool` enums (one variant per per-component layout) and each layout's
/// [`Layout`](super::Layout) type.
/// `pools` lists the layouts with one pool per component type as `Variant(cli name, label, Pool, Layout)`;
/// `tables` the layouts that keep components some other way (the archetype tables), as `Variant(cli name, label)`.
macro_rules! backends {
    (
        pools { $($(#[$pdoc:meta])* $pool_variant:ident($pname:literal, $plabel:literal, $pool:ident, $layout:ident),)* }
        tables { $($(#[$tdoc:meta])* $table_variant:ident($tname:literal, $tlabel:literal),)* }
    ) => {
        /// The storage layout a world uses for all its components. The first is the default.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Backend {
            $($(#[$pdoc])* $pool_variant,)*
            $($(#[$tdoc])* $table_variant,)*
        }

        impl Backend {
            /// Every backend, in the order of the window's number keys.
            pub const ALL: [Backend; [$(stringify!($pool_variant),)* $(stringify!($table_variant),)*].len()] =
                [$(Backend::$pool_variant,)* $(Backend::$table_variant,)*];

            /// The command-line name, such as `sparse-set`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Backend::$pool_variant => $pname,)*
                    $(Backend::$table_variant => $tname,)*
                }
            }

            /// The name for people, such as `sparse set`.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Backend::$pool_variant => $plabel,)*
                    $(Backend::$table_variant => $tlabel,)*
                }
            }

            /// The per-component layout this backend is, if it keeps one pool per component type; `None` for
            /// a layout of tables.
            pub const fn pool_layout(self) -> Option<PoolLayout> {
                match self {
                    $(Backend::$pool_variant => Some(PoolLayout::$pool_variant),)*
                    $(Backend::$table_variant => None,)*
                }
            }
        }

        /// The backends that keep one pool per component type (an [`AnyPool`] variant and a
        /// [`Layout`](super::Layout) each).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum PoolLayout {
            $(
                #[doc = concat!("See [`Backend::", stringify!($pool_variant), "`].")]
                $pool_variant,
            )*
        }

        impl PoolLayout {
            /// The backend this layout is.
            pub const fn backend(self) -> Backend {
                match self {
                    $(PoolLayout::$pool_variant => Backend::$pool_variant,)*
                }
            }
        }

        impl<T> AnyPool<T> {
            /// Which layout this pool is in.
            pub fn layout(&self) -> PoolLayout {
                match self {
                    $(AnyPool::$pool_variant(_) => PoolLayout::$pool_variant,)*
                }
            }
        }

        /// One component type's pool in whichever per-component layout the world uses now.
        pub enum AnyPool<T> {
            $(
                #[doc = concat!("See [`Backend::", stringify!($pool_variant), "`].")]
                $pool_variant($pool<T>),
            )*
        }

        layouts! { $(
            #[doc = concat!("The ", $plabel, " layout, as a type.")]
            $layout => $pool_variant($pool);
        )* }
    };
}

// The one table of backends. Everything else that lists them is derived from it (the enum, `ALL`, names, labels,
// parsing and its error, `AnyPool`, the layouts) or matches `Backend` / `AnyPool` exhaustively (`dispatch!`,
// `with_pool!`), so a new backend is a compile error wherever it is not handled.
backends! {
    pools {
    /// Paged sparse array + packed entities + packed values, one per component type.
    SparseSet("sparse-set", "sparse set", SparseSet, SparseSetLayout),
    /// `index -> value` in a hash map with a fast non-cryptographic hasher (FxHash), one per type.
    HashMap("hash-map", "hash map", HashPool, HashMapLayout),
    /// `index -> value` in an ordered B-tree, one per type (the ordered-tree layout; a red-black tree or
    /// `SortedDictionary` elsewhere).
    BTree("btree", "b-tree", BTreePool, BTreeLayout),
    /// `Vec<Option<T>>` indexed by entity index, one per type (the direct array).
    DirectArray("direct-array", "direct array", DirectArray, DirectArrayLayout),
    }
    tables {
    /// One structure-of-arrays table per set of component types (as in Friflo.Engine.ECS, bevy and hecs).
    Archetype("archetype", "archetype"),
    }
}

impl Default for Backend {
    fn default() -> Self {
        Backend::ALL[0]
    }
}

impl Backend {
    /// The next backend in [`Backend::ALL`], wrapping around (Tab in the window).
    pub fn next(self) -> Backend {
        let i = Backend::ALL.iter().position(|&b| b == self).unwrap_or(0);
        Backend::ALL[(i + 1) % Backend::ALL.len()]
    }

    /// The command-line names, comma-separated: `sparse-set, hash-map, ...`.
    pub fn names() -> String {
        Backend::ALL.map(Backend::name).join(", ")
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend name that is not one of [`Backend::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBackend(pub String);

impl fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown backend `{}`; expected one of: {}", self.0, Backend::names())
    }
}

impl std::error::Error for UnknownBackend {}

impl FromStr for Backend {
    type Err = UnknownBackend;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // `dense-array`: the direct array's first name, still in saved worlds, recordings and scripts.
        let name = if s == "dense-array" { "direct-array" } else { s };
        Backend::ALL.into_iter().find(|b| b.name() == name).ok_or_else(|| UnknownBackend(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_the_old_name_still_reads() {
        for backend in Backend::ALL {
            assert_eq!(backend.name().parse(), Ok(backend));
        }
        assert_eq!("dense-array".parse(), Ok(Backend::DirectArray), "saved worlds and recordings name it so");
        let error = "dense".parse::<Backend>().unwrap_err().to_string();
        assert!(error.contains("`dense`") && error.contains("direct-array"), "{error}");
    }
}
