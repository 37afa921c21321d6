//! The io pool (D9): a few threads that do what may wait for the disk — an
//! open whose lookup is not cached, a read of pages not in the page cache —
//! so no worker ever does. Each result is posted to the worker's mailbox,
//! whose eventfd wakes that worker's epoll.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

/// Lowers the calling thread's priority to nice 19, the lowest (on Linux
/// the nice value is a thread's): for the verifier and compressor threads,
/// so when their work and requests want the same cores, the workers get
/// them, and a flood waits on itself. An idle core still runs them at full
/// speed.
pub(crate) fn at_lowest_priority() {
    let _ = rustix::process::setpriority_process(None, 19);
}

pub(crate) struct IoPool {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl IoPool {
    pub(crate) fn new(threads: usize) -> std::io::Result<IoPool> {
        IoPool::named("nikaia-io", threads)
    }

    /// A pool whose threads are called `NAME-0`, `NAME-1`, …
    pub(crate) fn named(name: &str, threads: usize) -> std::io::Result<IoPool> {
        IoPool::with_start(name, threads, || {})
    }

    /// The same, each thread running `start` first.
    pub(crate) fn with_start(name: &str, threads: usize, start: fn()) -> std::io::Result<IoPool> {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads.max(1) {
            let q = queue.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || {
                        start();
                        run(&q)
                    })?,
            );
        }
        Ok(IoPool {
            queue,
            threads: Mutex::new(handles),
        })
    }

    pub(crate) fn submit(&self, job: impl FnOnce() + Send + 'static) {
        let (lock, cv) = &*self.queue;
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .jobs
            .push_back(Box::new(job));
        cv.notify_one();
    }

    /// Jobs waiting for a thread now.
    pub(crate) fn queued(&self) -> usize {
        self.queue
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .jobs
            .len()
    }

    /// Finishes queued jobs, then stops the threads.
    pub(crate) fn close(&self) {
        self.stop();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let me = std::thread::current().id();
        // A pool closed by one of its own threads (the last holder of what
        // owns it let go there) leaves that thread to end by itself: a
        // thread cannot wait for its own end.
        for t in threads.into_iter().filter(|t| t.thread().id() != me) {
            let _ = t.join();
        }
    }

    /// Lets the threads end once the queue is empty, without waiting for
    /// them (a job that may run for seconds need not hold up a shutdown):
    /// they are detached.
    pub(crate) fn detach(&self) {
        self.stop();
        self.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn stop(&self) {
        let (lock, cv) = &*self.queue;
        lock.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        cv.notify_all();
    }
}

fn run(queue: &(Mutex<Queue>, Condvar)) {
    let (lock, cv) = queue;
    loop {
        let job = {
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    return;
                }
                q = cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        // A job that panics (a bug in a compressor, say) loses its own
        // result, not the thread: the others still run.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Where io results for one worker wait until it wakes.
pub(crate) struct Mailbox<T> {
    items: Mutex<Vec<T>>,
    waker: OwnedFd,
}

impl<T> Mailbox<T> {
    pub(crate) fn new(waker: OwnedFd) -> Mailbox<T> {
        Mailbox {
            items: Mutex::new(Vec::new()),
            waker,
        }
    }

    pub(crate) fn post(&self, item: T) {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(item);
        self.wake();
    }

    /// Posts several items with one wake, as many as fit under `cap`
    /// waiting; how many did not (they are dropped).
    pub(crate) fn post_all(&self, mut items: Vec<T>, cap: usize) -> usize {
        let mut waiting = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let room = cap.saturating_sub(waiting.len());
        let dropped = items.len().saturating_sub(room);
        items.truncate(room);
        waiting.append(&mut items);
        drop(waiting);
        self.wake();
        dropped
    }

    pub(crate) fn waker(&self) -> &OwnedFd {
        &self.waker
    }

    pub(crate) fn wake(&self) {
        let _ = rustix::io::write(&self.waker, &1u64.to_ne_bytes());
    }

    pub(crate) fn take(&self) -> Vec<T> {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.waker, &mut buf);
        std::mem::take(&mut *self.items.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for IoPool {
    fn drop(&mut self) {
        self.close();
    }
}
