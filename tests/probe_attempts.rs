//! A refused readiness attempt costs its syscalls and nothing else. The probes
//! retry every 200 µs until the target listens; extra work per attempt (an
//! anyhow error, which boxes and, under RUST_BACKTRACE=1, captures a
//! backtrace) made http attempts dearer than tcp ones, and a probe that uses
//! more CPU is woken later on a busy machine (issue 26 #8). Counted with a
//! counting allocator rather than timed, so a loaded machine cannot flake it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

struct Counting;
thread_local! {
    // Per thread: the other tests of this binary allocate meanwhile. A const
    // initialiser without destructor, so the allocator may touch it.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_refused_attempt_allocates_nothing() {
    use coldstart_core::probe::{http, tcp};
    // As many developers run: every anyhow error would capture a backtrace.
    std::env::set_var("RUST_BACKTRACE", "1");
    // A bound port that does not listen: every connect is refused (RST) at once.
    let closed = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let port = coldstart_testkit::free_port();
    closed
        .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into())
        .unwrap();

    let url = url::Url::parse(&format!("http://127.0.0.1:{port}/health")).unwrap();
    let mut probe = http::HttpProbe::new(url).unwrap();
    let mut tcp_probe = tcp::TcpProbe::new("127.0.0.1", port).unwrap();
    // Warm up lazily initialised state (thread-locals, the first error path).
    for _ in 0..3 {
        assert!(probe.step(Duration::from_secs(1)).is_none());
        assert!(!tcp_probe.step());
    }
    let (mut http_allocs, mut tcp_allocs, mut refused) = (0, 0, 0);
    for _ in 0..200 {
        let before = allocs();
        assert!(probe.step(Duration::from_secs(1)).is_none(), "nothing listens");
        let mid = allocs();
        assert!(!tcp_probe.step(), "nothing listens");
        http_allocs += mid - before;
        tcp_allocs += allocs() - mid;
        // A loopback refusal is settled inside the attempt; one still in flight
        // would be stepped again by the run loop (not counted as refused here).
        refused += usize::from(probe.pollfd().is_none());
    }
    assert!(
        refused > 100,
        "only {refused} of 200 http attempts were refused at once"
    );
    assert_eq!(http_allocs, 0, "allocations in 200 refused http attempts");
    assert_eq!(tcp_allocs, 0, "allocations in 200 refused tcp attempts");
}
