//! Charts as SVG and PNG: `charts` decides which charts the results call for, `draw`
//! renders them.

mod charts;
mod draw;

pub use charts::*;
pub use draw::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every `<text>` element of an SVG.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn thread_counts_are_evenly_spaced_categories() {
        let panel = LinePanel {
            title: "sweep".into(),
            x_desc: "threads".into(),
            y_desc: "tps".into(),
            lines: vec![Line {
                name: "A".into(),
                points: vec![(64.0, 0.4), (96.0, 0.5), (128.0, 0.6), (256.0, 0.7)],
            }],
            discrete_x: true,
        };
        let texts = svg_texts(&render_svg(&Chart::Lines(vec![panel])).unwrap());
        for t in ["64", "96", "128", "256"] {
            assert_eq!(
                texts.iter().filter(|x| *x == t).count(),
                1,
                "{t} in {texts:?}"
            );
        }
        // A linear axis from 64 to 256 would label 100, 150, 200.
        for t in ["100", "150", "200"] {
            assert!(!texts.iter().any(|x| x == t), "{t} in {texts:?}");
        }
    }

    #[test]
    fn space_bars_show_what_the_ratio_is_between() {
        let bar = |device_logical| SpaceBar {
            name: "db".into(),
            logical: 131.0 * 1048576.0,
            device_logical,
            physical: Some(246.0 * 1048576.0),
            ratio: Some(1.443),
        };
        let with_device = svg_texts(
            &render_svg(&Chart::SpaceBars {
                title: "space".into(),
                bars: vec![bar(Some(355.0 * 1048576.0))],
            })
            .unwrap(),
        );
        assert!(
            with_device.iter().any(|t| t == "logical (device)"),
            "{with_device:?}"
        );
        assert!(with_device.iter().any(|t| t == "1.44:1"), "{with_device:?}");
        let data_only = svg_texts(
            &render_svg(&Chart::SpaceBars {
                title: "space".into(),
                bars: vec![bar(None)],
            })
            .unwrap(),
        );
        assert!(
            !data_only.iter().any(|t| t == "logical (device)"),
            "{data_only:?}"
        );
        assert!(data_only.iter().any(|t| t == "physical"), "{data_only:?}");
    }

    #[test]
    fn tick_labels_share_one_precision_per_axis() {
        let f = TickFormat::new(0.0, 157.0);
        assert_eq!(
            (f.label(80.0), f.label(100.0), f.label(0.0)),
            ("80".into(), "100".into(), "0".into())
        );
        let f = TickFormat::new(0.0, 6.1);
        assert_eq!((f.label(1.0), f.label(4.0)), ("1".into(), "4".into()));
        let f = TickFormat::new(0.0, 2.5);
        assert_eq!((f.label(0.2), f.label(2.0)), ("0.2".into(), "2.0".into()));
        let f = TickFormat::new(0.0, 0.04);
        assert_eq!(f.label(0.005), "0.005");
        let f = TickFormat::new(0.0, 240_000.0);
        assert_eq!(
            (f.label(50_000.0), f.label(200_000.0)),
            ("50k".into(), "200k".into())
        );
        let f = TickFormat::new(0.0, 12_000.0);
        assert_eq!(f.label(2_000.0), "2k");
        let f = TickFormat::new(1.5e6, 1.9e6);
        assert_eq!(f.label(1.55e6), "1.55M");
    }
}
