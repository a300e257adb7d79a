// The probe of 2026-11-23 02:22 UTC (run as a cargo example of the crate, binary carried to the
// H100 host): faulting in 1 GiB with and without MADV_HUGEPAGE, three times each, alternating.
use std::time::Instant;
fn main() {
    let n = 16384usize * 16384;
    let src = vec![7u32; n];
    for advise in [false, true, false, true, false, true] {
        let t = Instant::now();
        let mut v = vec![0u32; n];
        if advise {
            let p = v.as_mut_ptr() as usize;
            let start = (p + 4095) & !4095;
            let end = (p + n * 4) & !4095;
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
        v.copy_from_slice(&src);
        println!("advise={advise} {:.3}", t.elapsed().as_secs_f64());
        drop(v);
    }
}
