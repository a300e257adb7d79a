//! CPU tests of the tensor-map descriptor rules (`tensor_map.rs`).

use super::*;

/// A packed row-major f32 matrix of `rows` × `cols`, boxes of 32 × 32.
fn matrix(rows: u64, cols: u64) -> TensorMapSpec {
    TensorMapSpec {
        index: 0,
        name: "tmap".into(),
        buffer: 0,
        data_type: TensorDataType::Float32,
        dims: vec![cols, rows],
        strides: packed_strides(&[cols, rows], 4),
        box_dims: vec![32, 32],
        element_strides: vec![1, 1],
        swizzle: Swizzle::None,
        interleave: Interleave::None,
        l2_promotion: L2Promotion::None,
        oob_fill: OobFill::Zero,
    }
}

fn key_of(spec: &TensorMapSpec, bytes: u64) -> &'static str {
    spec.check(bytes).expect_err("should be refused").key
}

#[test]
fn a_packed_matrix_passes_and_fills_its_buffer_exactly() {
    let m = matrix(512, 1024);
    assert_eq!(m.strides, vec![4096]);
    assert_eq!(m.extent_bytes(), 512 * 1024 * 4);
    assert_eq!(m.box_bytes(), 32 * 32 * 4);
    m.check(512 * 1024 * 4).unwrap();
    // A buffer one element short is refused: the view would read past it.
    let e = m.check(512 * 1024 * 4 - 4).unwrap_err();
    assert_eq!(e.key, "dims");
    assert!(e.message.contains("reaches 2097152 bytes"), "{}", e.message);
}

#[test]
fn packed_strides_multiply_outward() {
    assert_eq!(packed_strides(&[8, 4, 3], 2), vec![16, 64]);
    assert_eq!(packed_strides(&[100], 4), Vec::<u64>::new());
}

#[test]
fn rank_must_be_one_to_five_with_matching_lists() {
    let mut m = matrix(64, 64);
    m.dims = vec![];
    assert_eq!(key_of(&m, 1 << 30), "dims");
    let mut m = matrix(64, 64);
    m.dims = vec![2; 6];
    m.strides = packed_strides(&m.dims, 4);
    assert_eq!(key_of(&m, 1 << 30), "dims");
    let mut m = matrix(64, 64);
    m.box_dims = vec![32];
    assert_eq!(key_of(&m, 1 << 30), "box");
    let mut m = matrix(64, 64);
    m.element_strides = vec![1, 1, 1];
    assert_eq!(key_of(&m, 1 << 30), "element_strides");
    let mut m = matrix(64, 64);
    m.strides = vec![256, 256 * 64];
    assert_eq!(key_of(&m, 1 << 30), "strides");
    // Rank 1 and rank 5 are both fine.
    let mut m = matrix(1, 64);
    m.dims = vec![64];
    m.strides = vec![];
    m.box_dims = vec![32];
    m.element_strides = vec![1];
    m.check(256).unwrap();
    let mut m = matrix(1, 1);
    m.dims = vec![4, 2, 2, 2, 2];
    m.strides = packed_strides(&m.dims, 4);
    m.box_dims = vec![4, 1, 1, 1, 1];
    m.element_strides = vec![1; 5];
    m.check(4 * 16 * 4).unwrap();
}

#[test]
fn zero_or_huge_dims_are_refused() {
    let mut m = matrix(64, 64);
    m.dims[1] = 0;
    assert_eq!(key_of(&m, 1 << 30), "dims");
    let mut m = matrix(64, 64);
    m.dims[1] = (1 << 32) + 1;
    assert_eq!(key_of(&m, u64::MAX), "dims");
}

#[test]
fn strides_must_be_multiples_of_16_bytes_and_not_overlap() {
    // 1000 f32 columns: 4000-byte rows, a multiple of 16; 1001 columns are not.
    matrix(8, 1000).check(8 * 4000).unwrap();
    let m = matrix(8, 1001);
    let e = m.check(1 << 20).unwrap_err();
    assert_eq!(e.key, "strides");
    assert!(e.message.contains("4004 bytes"), "{}", e.message);
    assert!(
        e.fix.contains("4016"),
        "the fix names the padded stride: {}",
        e.fix
    );
    // Padded rows are fine when the buffer holds the padding.
    let mut m = matrix(8, 1001);
    m.strides = vec![4016];
    m.check(7 * 4016 + 4004).unwrap();
    // Rows closer than their own width would overlap.
    let mut m = matrix(8, 64);
    m.strides = vec![128];
    let e = m.check(1 << 20).unwrap_err();
    assert!(e.message.contains("overlap"), "{}", e.message);
    // 2^40 and above is out of range.
    let mut m = matrix(2, 64);
    m.strides = vec![1 << 40];
    assert_eq!(key_of(&m, u64::MAX), "strides");
}

#[test]
fn box_edges_are_one_to_256_and_may_pass_the_tensor() {
    let mut m = matrix(512, 512);
    m.box_dims = vec![32, 257];
    assert_eq!(key_of(&m, 1 << 30), "box");
    m.box_dims = vec![32, 0];
    assert_eq!(key_of(&m, 1 << 30), "box");
    // A box larger than the tensor is filled out of bounds (oob_fill), as the driver allows.
    let mut m = matrix(16, 64);
    m.box_dims = vec![32, 32];
    m.check(16 * 64 * 4).unwrap();
}

#[test]
fn the_inner_box_edge_is_a_multiple_of_16_bytes() {
    let mut m = matrix(64, 64);
    m.box_dims = vec![6, 32]; // 24 bytes
    let e = m.check(1 << 30).unwrap_err();
    assert_eq!(e.key, "box");
    assert!(e.fix.contains("multiple of 4 elements"), "{}", e.fix);
    // f16: 8 elements are 16 bytes.
    let mut m = matrix(64, 64);
    m.data_type = TensorDataType::Float16;
    m.strides = packed_strides(&m.dims, 2);
    m.box_dims = vec![8, 8];
    m.check(64 * 64 * 2).unwrap();
}

#[test]
fn the_inner_box_edge_fits_the_swizzle_span() {
    let mut m = matrix(256, 256);
    m.box_dims = vec![32, 32]; // 128 bytes of f32
    for (swizzle, ok) in [
        (Swizzle::None, true),
        (Swizzle::B32, false),
        (Swizzle::B64, false),
        (Swizzle::B128, true),
    ] {
        m.swizzle = swizzle;
        assert_eq!(m.check(256 * 256 * 4).is_ok(), ok, "{swizzle:?}");
    }
    m.swizzle = Swizzle::B64;
    let e = m.check(256 * 256 * 4).unwrap_err();
    assert!(e.message.contains("64-byte span"), "{}", e.message);
    assert!(e.fix.contains("at most 16 elements"), "{}", e.fix);
}

#[test]
fn element_strides_are_one_to_eight() {
    let mut m = matrix(64, 64);
    m.element_strides = vec![1, 9];
    assert_eq!(key_of(&m, 1 << 30), "element_strides");
    m.element_strides = vec![0, 1];
    assert_eq!(key_of(&m, 1 << 30), "element_strides");
    m.element_strides = vec![2, 8];
    m.check(1 << 30).unwrap();
}

#[test]
fn interleave_needs_rank_3_aligned_strides_and_swizzle_32b_for_32b() {
    let mut m = matrix(64, 64);
    m.interleave = Interleave::B16;
    assert_eq!(key_of(&m, 1 << 30), "interleave");
    let mut m = matrix(1, 1);
    m.dims = vec![8, 16, 16];
    m.strides = packed_strides(&m.dims, 4);
    m.box_dims = vec![8, 8, 8];
    m.element_strides = vec![1, 1, 1];
    m.interleave = Interleave::B32;
    m.swizzle = Swizzle::B64;
    assert_eq!(key_of(&m, 1 << 30), "swizzle");
    m.swizzle = Swizzle::B32;
    m.check(1 << 30).unwrap();
    // 32B interleave: strides are multiples of 32 bytes.
    m.dims = vec![4, 16, 16];
    m.strides = vec![48, 48 * 16];
    m.box_dims = vec![4, 8, 8];
    assert_eq!(key_of(&m, 1 << 30), "strides");
    assert_eq!(Interleave::B32.alignment(), 32);
    assert_eq!(Interleave::B16.alignment(), 16);
}

#[test]
fn nan_fill_is_for_float_types_only() {
    let mut m = matrix(64, 64);
    m.oob_fill = OobFill::Nan;
    m.check(1 << 30).unwrap();
    m.data_type = TensorDataType::for_elem(ElemType::E4m3);
    m.strides = packed_strides(&m.dims, 1);
    let e = m.check(1 << 30).unwrap_err();
    assert_eq!(e.key, "oob_fill");
    assert!(e.message.contains("UINT8"), "{}", e.message);
}

#[test]
fn element_types_map_to_tma_types_of_their_size() {
    use TensorDataType as T;
    let cases = [
        (ElemType::F16, T::Float16, 6),
        (ElemType::Bf16, T::Bfloat16, 9),
        (ElemType::F32, T::Float32, 7),
        (ElemType::F64, T::Float64, 8),
        (ElemType::E4m3, T::Uint8, 0),
        (ElemType::E5m2, T::Uint8, 0),
        (ElemType::I8, T::Uint8, 0),
        (ElemType::U8, T::Uint8, 0),
        (ElemType::I16, T::Uint16, 1),
        (ElemType::U16, T::Uint16, 1),
        (ElemType::I32, T::Int32, 3),
        (ElemType::U32, T::Uint32, 2),
        (ElemType::I64, T::Int64, 5),
        (ElemType::U64, T::Uint64, 4),
    ];
    for (elem, tma, code) in cases {
        assert_eq!(T::for_elem(elem), tma, "{elem:?}");
        assert_eq!(tma.code(), code, "{elem:?}");
        assert_eq!(tma.bytes(), elem.size() as u64, "{elem:?}");
    }
}

#[test]
fn enum_codes_match_the_driver() {
    assert_eq!(
        [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128].map(Swizzle::code),
        [0, 1, 2, 3]
    );
    assert_eq!(
        [Interleave::None, Interleave::B16, Interleave::B32].map(Interleave::code),
        [0, 1, 2]
    );
    assert_eq!(
        [
            L2Promotion::None,
            L2Promotion::B64,
            L2Promotion::B128,
            L2Promotion::B256
        ]
        .map(L2Promotion::code),
        [0, 1, 2, 3]
    );
    assert_eq!([OobFill::Zero, OobFill::Nan].map(OobFill::code), [0, 1]);
}

#[test]
fn the_manifest_form_parses() {
    let decl: TensorMapDecl = toml::from_str(
        r#"
name = "tmap_in"
buffer = "input"
dims = ["COLS", "ROWS"]
box = ["32", "32"]
swizzle = "128B"
l2_promotion = "256B"
oob_fill = "nan"
"#,
    )
    .unwrap();
    assert_eq!(decl.box_dims, vec!["32", "32"]);
    assert_eq!(decl.swizzle, Swizzle::B128);
    assert_eq!(decl.interleave, Interleave::None);
    assert_eq!(decl.l2_promotion, L2Promotion::B256);
    assert_eq!(decl.oob_fill, OobFill::Nan);
    assert!(decl.strides.is_none());
    let bad = toml::from_str::<TensorMapDecl>(
        "name = \"t\"\nbuffer = \"a\"\ndims = [\"1\"]\nbox = [\"1\"]\nswizzle = \"16B\"",
    );
    assert!(bad.is_err());
}
