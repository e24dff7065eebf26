//! Route on the H200 profile through the public API: streaming decisions
//! carry exactly the launch parameters the GPU host side will pass, and the
//! SM-count adaptations (132 instead of 148) move the family boundaries.
//! The H200 family table is printed (`-- --nocapture`) for the report.

use gvr_bench::topk::route::{clus_params, main_params, route, DeviceProfile, Family};

const NS: [usize; 9] = [
    2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 1048576,
];
const BS: [usize; 8] = [1, 16, 32, 64, 132, 148, 256, 512];

#[test]
fn streaming_decisions_carry_their_launch_parameters() {
    let dev = DeviceProfile::h200();
    for k in [512, 1024, 2048] {
        for b in BS {
            let mut line = format!("k={k:<4} b={b:<4}");
            for n in NS {
                let d = route(b, n, n, k, &dev);
                line.push_str(&format!(" {:>10}", d.label()));
                match d.family {
                    Family::Main => {
                        let want = main_params(b, n, n, k, d.ctas_per_row, &dev);
                        assert_eq!(d.params, Some(want), "b={b} n={n} k={k}");
                        assert_eq!(
                            (d.blk, d.minb, d.smem_bytes),
                            (want.blk, want.minb, want.smem_bytes)
                        );
                    }
                    Family::Clus => {
                        let want = clus_params(b, n, n, k, d.cluster, &dev);
                        assert_eq!(d.params, Some(want), "b={b} n={n} k={k}");
                        assert!(dev.cluster_fits(d.cluster, b));
                    }
                    Family::Reg | Family::RegImg | Family::RegClus => assert!(d.params.is_none()),
                }
            }
            eprintln!("{line}");
        }
    }
}

#[test]
fn h200_sm_count_moves_the_boundaries() {
    let (h200, b200) = (DeviceProfile::h200(), DeviceProfile::b200());
    // 140 rows of 32K: one wave on B200 (main BLK 1024), not on H200 (BLK 512).
    assert_eq!(route(140, 32768, 32768, 512, &b200).label(), "m1024");
    assert_eq!(route(140, 32768, 32768, 512, &h200).label(), "m512");
    // 140 rows of 4K: B200 keeps the wide register rung, H200 the narrow one.
    assert_eq!(route(140, 4096, 4096, 1024, &b200).label(), "reg1024/1D");
    assert_eq!(route(140, 4096, 4096, 1024, &h200).label(), "reg512/2D");
    // 70 rows of 64K (k ≤ 1024): R = 2 clusters up to 74 rows on B200, 66 on H200.
    assert_eq!(route(70, 65536, 65536, 512, &b200).label(), "cl2");
    assert_eq!(route(70, 65536, 65536, 512, &h200).label(), "m1024");
}
