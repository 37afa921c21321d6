//! One kept-open loopback TCP connection with a thread draining the far end
//! and counting what arrives.

use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Link {
    /// The sending end; vehicles write to it.
    pub sock: TcpStream,
    received: Arc<AtomicU64>,
    drainer: JoinHandle<io::Result<u64>>,
}

impl Link {
    /// Connects to a fresh listener on 127.0.0.1 and starts the drainer.
    pub fn open() -> io::Result<Link> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let sock = TcpStream::connect(listener.local_addr()?)?;
        let (mut far, _) = listener.accept()?;
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        let drainer = std::thread::Builder::new()
            .name("drain".into())
            .spawn(move || {
                let mut buf = vec![0u8; 256 << 10];
                let mut total = 0u64;
                loop {
                    match far.read(&mut buf) {
                        Ok(0) => return Ok(total),
                        Ok(n) => {
                            total += n as u64;
                            counter.store(total, Ordering::Release);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            })?;
        Ok(Link {
            sock,
            received,
            drainer,
        })
    }

    /// Waits until the far end has counted `bytes` in all (after a warm-up,
    /// so that its bytes are not drained inside the measured block).
    pub fn wait_for(&self, bytes: u64) -> io::Result<()> {
        let start = Instant::now();
        while self.received.load(Ordering::Acquire) < bytes {
            if start.elapsed() > Duration::from_secs(60) {
                return Err(io::Error::other("the far end stopped receiving"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Closes the sending side and returns what the far end received in all.
    pub fn finish(self) -> io::Result<u64> {
        self.sock.shutdown(Shutdown::Write)?;
        let got = self
            .drainer
            .join()
            .map_err(|_| io::Error::other("the drainer panicked"))??;
        Ok(got)
    }
}
