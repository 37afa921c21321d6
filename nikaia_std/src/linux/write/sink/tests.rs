//! The one life of a write, driven through its stages by a scripted act:
//! what each stage calls, in which order, what holds the body meanwhile,
//! and the faults — the client gone, the disk full, the server stopping,
//! a precondition failing at the name, credentials refused.

use super::*;
use crate::http::site::Check;
use crate::linux::auth_pool::AuthPool;
use crate::linux::current::Current;
use crate::rt::{AuthRule, Runtime, Users};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::time::Duration;

/// What the scripted act does at each step.
struct Script {
    /// Credentials to check first.
    check: Option<Check>,
    /// The body (after a check, or at once).
    takes_body: bool,
    /// The run at which the disk is full (507).
    full_at: Option<usize>,
    /// The status the name gives (201, or 412 for a precondition that
    /// fails at the name).
    named: u16,
    /// A verdict is taken only once the test says so.
    gate: Option<mpsc::Receiver<()>>,
}

/// A scripted act; `STOPS` is its [`Act::STOPS_WITHOUT_CLIENT`].
struct Scripted<const STOPS: bool> {
    script: Script,
    calls: Arc<Mutex<Vec<String>>>,
    runs: usize,
}

impl<const STOPS: bool> Scripted<STOPS> {
    fn note(&self, call: String) {
        lock(&self.calls).push(call);
    }
}

impl<const STOPS: bool> Act for Scripted<STOPS> {
    const STOPS_WITHOUT_CLIENT: bool = STOPS;

    fn begin(&mut self) -> Step {
        self.note("begin".into());
        match self.script.check.take() {
            Some(check) => Step::Check(Box::new(check)),
            None => Step::Open,
        }
    }

    fn checked(&mut self, _check: Check, verdict: Verdict) -> Step {
        if let Some(gate) = &self.script.gate {
            gate.recv().unwrap();
        }
        self.note(format!("checked {verdict:?}"));
        match verdict {
            Verdict::Valid => Step::Open,
            _ => Step::Answer(Response::status_page(401)),
        }
    }

    fn open(&mut self) -> Step {
        self.note("open".into());
        match self.script.takes_body {
            true => Step::Body,
            false => Step::Answer(Response::status_page(204)),
        }
    }

    fn write(&mut self, run: &[u8]) -> Result<(), Response> {
        self.note(format!("write {}", run.len()));
        self.runs += 1;
        if self.script.full_at == Some(self.runs) {
            return Err(Response::status_page(507));
        }
        Ok(())
    }

    fn name(&mut self, end: End) -> Option<Response> {
        self.note(format!("name {end:?}"));
        match end {
            End::Whole => Some(Response::status_page(self.script.named)),
            End::Left => None,
        }
    }
}

/// A wing with its threads, for a sink to run in.
fn wing() -> Arc<Wing> {
    let rt = Runtime::default();
    let auth = Arc::new(AuthPool::new().unwrap());
    let current = Arc::new(Current::new(rt.clone()));
    let wing = Wing::new(&rt, auth, current, Arc::default(), Arc::default());
    Arc::new(wing.unwrap())
}

/// A sink of `script`, begun: its calls, its answer's status when one is
/// sent, and how often its body was let go on (each pause's resume).
struct Run<const STOPS: bool> {
    /// Held for the run: its threads end with it, on the test's thread.
    _wing: Arc<Wing>,
    sink: Option<Box<Sink<Scripted<STOPS>>>>,
    calls: Arc<Mutex<Vec<String>>>,
    answer: mpsc::Receiver<u16>,
    resumed: Arc<AtomicUsize>,
    paused: usize,
}

impl<const STOPS: bool> Run<STOPS> {
    fn begin(script: Script) -> Run<STOPS> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let act = Scripted::<STOPS> {
            script,
            calls: calls.clone(),
            runs: 0,
        };
        let wing = wing();
        let mut sink = Box::new(Sink::new(&wing, act));
        let (tx, answer) = mpsc::channel();
        let reply = Reply::new(move |resp: Response| {
            let _ = tx.send(resp.status());
        });
        let mut run = Run {
            _wing: wing,
            sink: None,
            calls,
            answer,
            resumed: Arc::default(),
            paused: 0,
        };
        run.flow(|sink, flow| sink.begin(flow, reply), &mut sink);
        run.sink = Some(sink);
        run
    }

    /// Calls `f` with a flow whose pauses are counted and whose resumes
    /// count in `resumed`.
    fn flow(
        &mut self,
        f: impl FnOnce(&mut Sink<Scripted<STOPS>>, &mut Flow<'_>),
        sink: &mut Sink<Scripted<STOPS>>,
    ) {
        let resumed = self.resumed.clone();
        let mut pauses = 0;
        let mut pause = || {
            pauses += 1;
            let resumed = resumed.clone();
            Resume::new(move || {
                resumed.fetch_add(1, SeqCst);
            })
        };
        f(sink, &mut Flow::new(&mut pause));
        self.paused += pauses;
    }

    fn piece(&mut self, len: usize) {
        let mut sink = self.sink.take().expect("the sink");
        self.flow(|sink, flow| sink.piece(&vec![7u8; len], flow), &mut sink);
        self.sink = Some(sink);
    }

    fn end(&mut self) {
        let sink = self.sink.take().expect("the sink");
        let req = crate::http::h1::parse::test_request("PUT /a HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(Erased::end(sink, &req).is_none(), "a write answers later");
    }

    fn abort(&mut self, why: Aborted) {
        Erased::abort(self.sink.take().expect("the sink"), why);
    }

    /// The calls once `last` is among them.
    fn calls_until(&self, last: &str) -> Vec<String> {
        for _ in 0..1000 {
            let calls = lock(&self.calls).clone();
            if calls.iter().any(|c| c == last) {
                return calls;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("no {last:?} in {:?}", lock(&self.calls));
    }

    fn answered(&self) -> u16 {
        self.answer
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer")
    }
}

fn body() -> Script {
    Script {
        check: None,
        takes_body: true,
        full_at: None,
        named: 201,
        gate: None,
    }
}

#[test]
fn a_body_is_held_until_opened_then_written_in_runs_and_named() {
    let mut run = Run::<true>::begin(body());
    assert_eq!(run.calls_until("open"), ["begin", "open"]);
    // Held from its begin, let go once the act took the body.
    assert_eq!(run.paused, 1);
    while run.resumed.load(SeqCst) == 0 {
        std::thread::yield_now();
    }
    run.piece(RUN + 10);
    run.end();
    assert_eq!(run.answered(), 201);
    let calls = run.calls_until("name Whole");
    assert_eq!(
        calls,
        [
            "begin",
            "open",
            &format!("write {RUN}"),
            "write 10",
            "name Whole"
        ]
    );
}

#[test]
fn a_client_gone_mid_body_is_named_left_and_answered_to_no_one() {
    let mut run = Run::<true>::begin(body());
    run.calls_until("open");
    run.piece(RUN);
    run.abort(Aborted::Gone);
    let calls = run.calls_until("name Left");
    assert_eq!(calls.last().unwrap(), "name Left");
    assert!(run.answer.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn the_server_stopping_ends_a_body_as_a_client_gone() {
    let mut run = Run::<false>::begin(body());
    run.calls_until("open");
    run.abort(Aborted::Stopping);
    assert_eq!(run.calls_until("name Left"), ["begin", "open", "name Left"]);
    assert!(run.answer.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn a_full_disk_is_answered_at_its_run_and_nothing_more_is_written() {
    let mut run = Run::<true>::begin(Script {
        full_at: Some(1),
        ..body()
    });
    run.calls_until("open");
    run.piece(RUN);
    assert_eq!(run.answered(), 507);
    // What comes after is dropped: no write, no name.
    run.piece(RUN);
    run.end();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        lock(&run.calls).clone(),
        ["begin", "open", &format!("write {RUN}")]
    );
}

#[test]
fn a_precondition_failing_at_the_name_is_its_answer() {
    let mut run = Run::<true>::begin(Script {
        named: 412,
        ..body()
    });
    run.calls_until("open");
    run.end();
    assert_eq!(run.answered(), 412);
    assert_eq!(
        run.calls_until("name Whole"),
        ["begin", "open", "name Whole"]
    );
}

#[test]
fn a_write_without_a_body_answers_from_its_opening() {
    let mut run = Run::<false>::begin(Script {
        takes_body: false,
        ..body()
    });
    assert_eq!(run.answered(), 204);
    assert_eq!(run.calls_until("open"), ["begin", "open"]);
    // Its body, if any, is never taken: held, never let go by the act.
    assert_eq!(run.resumed.load(SeqCst), 0);
    run.end();
}

/// Credentials of `user:password` for a users file that has `user` with
/// `password`.
fn check(password: &str) -> Check {
    let hash = bcrypt::hash_with_salt("right", 4, [7u8; 16]).unwrap();
    let users = Users::parse(&format!(
        "ann:{}\n",
        hash.format_for_version(bcrypt::Version::TwoB)
    ))
    .unwrap();
    let rule = AuthRule {
        patterns: Vec::new(),
        htpasswd: "/users".into(),
        users: Arc::new(users),
        generation: 1,
        realm: "r".into(),
        plain_http: true,
        writes_only: false,
    };
    let basic = crate::text::base64::standard(format!("ann:{password}").as_bytes());
    let head = format!("PUT /a HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {basic}\r\n\r\n");
    Check::of(&rule, &crate::http::h1::parse::test_request(&head)).unwrap()
}

#[test]
fn credentials_are_checked_before_the_opening_and_refused_ones_answered() {
    let run = Run::<true>::begin(Script {
        check: Some(check("right")),
        ..body()
    });
    assert_eq!(run.calls_until("open"), ["begin", "checked Valid", "open"]);
    let run = Run::<true>::begin(Script {
        check: Some(check("wrong")),
        ..body()
    });
    assert_eq!(run.answered(), 401);
    assert_eq!(
        run.calls_until("checked Invalid"),
        ["begin", "checked Invalid"]
    );
}

#[test]
fn a_client_gone_before_the_opening_stops_an_act_that_stops_without_it() {
    // A body to a file is not opened for no one: gone while its
    // credentials are checked, nothing is opened.
    let (go, gate) = mpsc::channel();
    let mut run = Run::<true>::begin(Script {
        check: Some(check("right")),
        gate: Some(gate),
        ..body()
    });
    run.abort(Aborted::Gone);
    go.send(()).unwrap();
    run.calls_until("checked Valid");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(lock(&run.calls).clone(), ["begin", "checked Valid"]);
    // A removal (or a tus request) goes on: what it does stands.
    let (go, gate) = mpsc::channel();
    let mut run = Run::<false>::begin(Script {
        check: Some(check("right")),
        gate: Some(gate),
        ..body()
    });
    run.abort(Aborted::Gone);
    go.send(()).unwrap();
    assert_eq!(
        run.calls_until("name Left"),
        ["begin", "checked Valid", "open", "name Left"]
    );
}
