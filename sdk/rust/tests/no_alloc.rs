//! checkpoint allocates nothing after its first call, enabled or not.
//! A test binary of its own (harness = false), so nothing else allocates meanwhile.
use coldstart_checkpoint::{__reset_for_tests, checkpoint};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl Fn()) -> usize {
    let before = ALLOCS.load(Ordering::SeqCst);
    for _ in 0..1000 {
        f();
    }
    ALLOCS.load(Ordering::SeqCst) - before
}

fn main() {
    std::env::remove_var("COLDSTART_FD");
    __reset_for_tests();
    checkpoint("first call reads the environment");
    let disabled = allocations_in(|| checkpoint("disabled"));

    std::env::set_var("COLDSTART_FD", "junk");
    __reset_for_tests();
    checkpoint("first");
    let invalid = allocations_in(|| checkpoint("invalid"));

    let null = std::fs::OpenOptions::new().write(true).open("/dev/null").unwrap();
    use std::os::unix::io::AsRawFd;
    std::env::set_var("COLDSTART_FD", null.as_raw_fd().to_string());
    __reset_for_tests();
    checkpoint("first");
    let enabled = allocations_in(|| checkpoint("enabled, to /dev/null"));

    let mut failed = 0;
    for (what, n) in [("unset", disabled), ("invalid", invalid), ("enabled", enabled)] {
        if n == 0 {
            println!("ok   no-alloc/{what}");
        } else {
            println!("FAIL no-alloc/{what}: {n} allocations in 1000 calls");
            failed += 1;
        }
    }
    println!("{} passed, {failed} failed", 3 - failed);
    if failed > 0 {
        std::process::exit(1);
    }
}
