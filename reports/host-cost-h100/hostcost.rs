// The probe of 2026-11-23 02:22 UTC (a cargo example of the crate at cdbbf7a, binary carried to
// the H100 host): host-side costs of a 16384² f32 job and of 2^26-element conversions.
// check_transpose runs on data that is not transposed (it reports `false`); it times the walk.
use gpu_lab::verify::*;
use std::time::Instant;
fn main() {
    let n = 16384usize * 16384;
    let t = Instant::now();
    let a = data::HostData::init(ElemType::F32, n, Init::Random, 1);
    println!("init {:.3}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut z = data::HostData::zeroed(ElemType::F32, n);
    z.as_bytes_mut().copy_from_slice(a.as_bytes());
    println!("zeroed+copy {:.3}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    z.as_bytes_mut().copy_from_slice(a.as_bytes());
    println!("copy again {:.3}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let c = reference::check_copy(ElemType::F32, &a, &z);
    println!("check_copy {:.3} {}", t.elapsed().as_secs_f64(), c.passed);
    let t = Instant::now();
    let c = reference::check_transpose(ElemType::F32, &a, &z, 16384, 16384);
    println!("check_transpose {:.3} {}", t.elapsed().as_secs_f64(), c.passed);
    let m = 67108864;
    let x = data::HostData::init(ElemType::F32, m, Init::Random, 1);
    let t = Instant::now();
    let h = x.converted(ElemType::F32, ElemType::F16);
    println!("convert f16 {:.3} {}", t.elapsed().as_secs_f64(), h.len());
    let t = Instant::now();
    let h = x.converted(ElemType::F32, ElemType::Bf16);
    println!("convert bf16 {:.3} {}", t.elapsed().as_secs_f64(), h.len());
}
