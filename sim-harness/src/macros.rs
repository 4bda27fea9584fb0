//! The macros service code uses: fault points and sometimes-assertions.
//! Under `--cfg simulation` they talk to the running simulation; in a
//! production build they are `false` (fault points) or nothing at all (the
//! assertions: the condition is type-checked, never evaluated).

/// A fault point (FoundationDB's BUGGIFY): `if sim::buggify!() { … }`
/// takes the rare path on some runs. The site is named by its file and line
/// (or `sim::buggify!("name")`). Per run, fault points are on for three
/// seeds in four; a site is active in a run with p = 1/4 and then fires
/// with p = 1/4 each time it is reached. In production: `false`.
#[macro_export]
macro_rules! buggify {
    () => {
        $crate::__private::buggify(::core::concat!(::core::file!(), ":", ::core::line!()), 1, 4)
    };
    ($name:literal) => {
        $crate::__private::buggify($name, 1, 4)
    };
}

/// A fault point that fires with probability `num / den` when active:
/// `sim::buggify_with_prob!(1, 100)`. In production: `false`.
#[macro_export]
macro_rules! buggify_with_prob {
    ($num:expr, $den:expr) => {
        $crate::__private::buggify(
            ::core::concat!(::core::file!(), ":", ::core::line!()),
            $num,
            $den,
        )
    };
}

/// `sim::sometimes!(cond, "name")`: the sweep reports whether `cond` held
/// at least once (a fault plan that never reaches the interesting state
/// shows up). Nothing in production.
#[macro_export]
macro_rules! sometimes {
    ($cond:expr, $name:literal) => {
        $crate::__site!(Sometimes, $name, $cond)
    };
}

/// `sim::always!(cond, "name")`: `cond` must hold every time; a seed where
/// it does not fails (class assertion). Nothing in production.
#[macro_export]
macro_rules! always {
    ($cond:expr, $name:literal) => {
        $crate::__site!(Always, $name, $cond)
    };
}

/// `sim::reachable!("name")`: the sweep reports whether this point was
/// ever reached. Nothing in production.
#[macro_export]
macro_rules! reachable {
    ($name:literal) => {
        $crate::__site!(Reachable, $name, true)
    };
}

/// `sim::unreachable!("name")`: reaching this point fails the seed (class
/// assertion). Nothing in production.
#[macro_export]
macro_rules! unreachable {
    ($name:literal) => {
        $crate::__site!(Unreachable, $name, true)
    };
}

#[cfg(simulation)]
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($kind:ident, $name:literal, $cond:expr) => {{
        #[$crate::__private::linkme::distributed_slice($crate::__private::SITES)]
        #[linkme(crate = $crate::__private::linkme)]
        static __SIM_SITE: $crate::__private::Site = $crate::__private::Site {
            kind: $crate::__private::SiteKind::$kind,
            name: $name,
            file: ::core::file!(),
            line: ::core::line!(),
        };
        $crate::__private::hit(&__SIM_SITE, $cond)
    }};
}

#[cfg(not(simulation))]
#[doc(hidden)]
#[macro_export]
macro_rules! __site {
    ($kind:ident, $name:literal, $cond:expr) => {{
        if false {
            let _: bool = $cond;
        }
    }};
}

/// `sim::state!("name", value)`: records a small value of the run's state
/// (a role, a term, a phase: anything `Debug`). In an exploration
/// (`#[sim::test(explore = n)]`) a value, or combination of values, that no
/// run had before is new: runs branch from the moment it was first seen.
/// Nothing in production (the value is type-checked, never evaluated).
#[cfg(simulation)]
#[macro_export]
macro_rules! state {
    ($name:literal, $value:expr) => {
        $crate::__private::state($name, $crate::__private::state_hash(&$value))
    };
}

#[cfg(not(simulation))]
#[macro_export]
macro_rules! state {
    ($name:literal, $value:expr) => {{
        if false {
            let _ = &$value;
        }
    }};
}

/// `sim::claims!("net.crash", …);` in a test: the test checks these rows
/// of failure-mode tables (a markdown table whose first column is `failure
/// mode`, in any crate's docs). `cargo xtask tidy` reads claims from the
/// source and fails on a row no test claims and on a claim of no row. In
/// a `#[sim::test]`, the argument `claims = [..]` says the same. Expands
/// to nothing.
#[macro_export]
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}
