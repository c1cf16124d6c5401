//! Newtypes for identifiers and units, so that a job id is never confused with
//! a uid or a count. Proto messages carry raw integers; they are mapped to these
//! at the proto boundary.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl $name {
            pub const fn new(v: $inner) -> Self {
                Self(v)
            }
            pub const fn get(self) -> $inner {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<$inner> for $name {
            fn from(v: $inner) -> Self {
                Self(v)
            }
        }
    };
}

id_type!(
    /// A job id, allocated by the controller from FirstJobId.
    JobId(u32)
);
id_type!(
    /// A step id within a job (batch step, extern step and numbered steps).
    StepId(u32)
);
id_type!(
    /// A Unix user id.
    Uid(u32)
);
id_type!(
    /// A Unix group id.
    Gid(u32)
);
