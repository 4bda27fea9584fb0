//! The violation's text.

use sim_check::{
    linearizable, linearizable_with, CheckError, History, Options, Register, RegisterOp as R,
    RegisterRet as Rr,
};
use std::time::Duration;

#[test]
fn the_timeline_shows_each_client_and_marks_the_unplaced_op() {
    let ms = Duration::from_millis;
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), ms(1));
    h.label(w, "n1");
    let r = h.invoke(1, R::Read, ms(2));
    h.label(r, "n2");
    h.ok(r, Rr::Read(1), ms(3));
    h.ok(w, Rr::Write, ms(4));
    let u = h.invoke(2, R::Write(2), ms(5));
    h.unknown(u, ms(6));
    let r = h.invoke(1, R::Read, ms(7));
    h.label(r, "n2");
    h.ok(r, Rr::Read(0), ms(8));
    let text = linearizable(&Register::new(0), &h).unwrap_err().to_string();
    let expected = "\
not linearizable: 2 completed operation(s) whose answers cannot all be explained, in the history up to event 7 (4 operations in this partition)
minimal: treating any one of them as a maybe makes that history linearizable

client 0 @n1  (#0 write 1------)
client 1 @n2    [#1 read -> 1]   [#3 read -> 0]   <- #3 cannot be placed

  #0     maybe  write 1    client 0 on n1, called at event 0 (1ms), ok at event 3 (4ms)
  #1     core   read -> 1  client 1 on n2, called at event 1 (2ms), ok at event 2 (3ms)
! #3     core   read -> 0  client 1 on n2, called at event 6 (7ms), ok at event 7 (8ms)

#3 cannot be placed after the longest linearizable order found, #0 #1 (state then: 1).
[ ] core: answers as recorded; ( ) maybe: took effect between call and return or never, any answer; ? open: may take effect at any time after its call, or never.
";
    assert_eq!(text, expected, "got:\n{text}");
}

#[test]
fn an_open_operation_runs_to_the_right_edge_and_its_client_gets_a_second_lane() {
    let mut h = History::new();
    let w = h.invoke(0, R::Write(1u8), None);
    h.unknown(w, None);
    let r = h.invoke(0, R::Read, None);
    h.ok(r, Rr::Read(1), None);
    let r = h.invoke(1, R::Read, None);
    h.ok(r, Rr::Read(0), None);
    let text = linearizable(&Register::new(0), &h).unwrap_err().to_string();
    let timeline: Vec<&str> = text.lines().skip(3).take(3).collect();
    assert_eq!(
        timeline,
        [
            "client 0  (#0 write 1 ?..................",
            "client 0    [#1 read -> 1]",
            "client 1                   [#2 read -> 0]   <- #2 cannot be placed",
        ],
        "got:\n{text}"
    );
}

#[test]
fn an_unshrunk_violation_draws_only_the_operations_nearest_the_unplaced_one() {
    let mut h = History::new();
    for v in 1..=100u8 {
        let w = h.invoke(0, R::Write(v), None);
        h.ok(w, Rr::Write, None);
    }
    let r = h.invoke(1, R::Read, None);
    h.ok(r, Rr::Read(7), None);
    // No steps for shrinking: the whole partition is the core.
    let options = Options {
        shrink_steps_max: 0,
        ..Options::default()
    };
    let v = match linearizable_with(&Register::new(0), &h, &options) {
        Err(CheckError::Violation(v)) => v,
        other => panic!("{other:?}"),
    };
    assert!(!v.is_minimal());
    assert_eq!(v.core().len(), 101);
    let text = v.to_string();
    assert!(text.contains("not proven minimal"), "{text}");
    assert!(
        text.contains("(48 of 101 operations drawn: those called nearest the unplaced one)"),
        "{text}"
    );
    assert!(
        text.contains("#100 read -> 7]   <- #100 cannot be placed"),
        "{text}"
    );
    assert!(!text.contains("#52 "), "{text}");
    assert!(
        text.contains("the longest linearizable order found, (88 before) #88 #89"),
        "{text}"
    );
    assert!(text.contains("#53 write 54"), "{text}");
}
