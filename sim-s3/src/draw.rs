//! The seeded draws of `Faults::drawn`: named fault points, so a sweep's
//! fault catalog and coverage list each one (never in production).

pub(crate) fn slow_down() -> bool {
    sim::buggify!("s3: 503 SlowDown")
}

pub(crate) fn internal_error() -> bool {
    sim::buggify!("s3: 500 InternalError")
}

pub(crate) fn conflict() -> bool {
    sim::buggify!("s3: 409 ConditionalRequestConflict")
}

pub(crate) fn reset_mid_body() -> bool {
    sim::buggify!("s3: reset mid-body")
}

pub(crate) fn lose_reply() -> bool {
    sim::buggify!("s3: reply lost after the write")
}

pub(crate) fn slow_first_byte() -> bool {
    sim::buggify!("s3: slow first byte")
}
