use super::ini::{Expansion, parse};
use super::print::print_job;
use super::value::Keywords;
use super::*;

fn sections(text: &str) -> Vec<Section> {
    let exp = Expansion {
        var: &|_| None,
        keywords: Keywords {
            pagesize: 4096,
            mb_memory: 1024,
            ncpus: 2,
        },
    };
    parse("t.fio", text, &exp, &mut |n, _| Err(format!("{n}: none"))).unwrap()
}

fn plan_of(text: &str) -> JobFilePlan {
    plan(&sections(text), false).unwrap()
}

#[test]
fn jobs_inherit_the_globals_before_them_and_fio_defaults() {
    let p = plan_of(
        "[global]\nbs=8k\nfilename=/tmp/x\nsize=1m\n[a]\nrw=randwrite\n[global]\nbs=16k\n[b]\n",
    );
    assert_eq!(p.jobs.len(), 2);
    let (a, b) = (&p.jobs[0].spec, &p.jobs[1].spec);
    assert_eq!((a.bs, a.rw), (8192, RwMode::Randwrite));
    // The second [global] changes later jobs only; rw is fio's default read.
    assert_eq!((b.bs, b.rw), (16384, RwMode::Read));
    assert!(!a.direct, "fio's direct=0");
    assert_eq!(a.seed, FIO_RANDSEED);
    assert_eq!(a.compress_fill, Fill::Zeros);
    assert_eq!(p.global_options[0], ("bs".to_string(), "8k".to_string()));
    assert_eq!(
        p.jobs[0].job_options,
        [("rw".to_string(), "randwrite".to_string())]
    );
}

#[test]
fn stonewall_orders_and_groups_new_group_only_groups() {
    let p = plan_of(
        "[global]\nfilename=/tmp/x\nsize=1m\n[w]\nrw=write\n[r1]\nstonewall\n[r2]\n[r3]\nnew_group\n[r4]\nstonewall\nwait_for=w\n",
    );
    let groups: Vec<u32> = p.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, [0, 1, 1, 2, 3]);
    let after: Vec<Vec<usize>> = p
        .jobs
        .iter()
        .map(|j| (0..p.jobs.len()).filter(|&k| j.waits_for(k)).collect())
        .collect();
    assert_eq!(after[0], Vec::<usize>::new());
    assert_eq!(after[1], [0]);
    assert_eq!(after[2], [0], "jobs after a stonewall start with it");
    assert_eq!(after[3], [0], "new_group does not wait");
    assert_eq!(after[4], [0, 1, 2, 3]);
    let e = plan(&sections("[a]\nfilename=/x\nwait_for=zz\n"), false).unwrap_err();
    assert!(e.to_string().contains("no job named zz"), "{e}");
}

#[test]
fn clones_share_a_named_file_and_get_their_own_without_one() {
    let p = plan_of("[j]\nfilename=/tmp/x\nnumjobs=4\nsize=1m\n");
    assert_eq!(p.jobs.len(), 1);
    assert_eq!(p.jobs[0].spec.numjobs, 4);
    let p = plan_of("[j]\ndirectory=/tmp/d\nnumjobs=3\nsize=1m\ngroup_reporting\n");
    let targets: Vec<_> = p
        .jobs
        .iter()
        .map(|j| j.spec.target.clone().unwrap())
        .collect();
    assert_eq!(targets, ["/tmp/d/j.0.0", "/tmp/d/j.1.0", "/tmp/d/j.2.0"]);
    assert!(
        p.jobs
            .iter()
            .all(|j| j.spec.numjobs == 1 && j.group_reporting)
    );
    let seeds: Vec<u64> = p.jobs.iter().map(|j| j.spec.seed).collect();
    assert_eq!(seeds, [0x89, 0x8a, 0x8b]);
}

#[test]
fn every_unsupported_option_is_named_with_its_place() {
    let text =
        "[global]\nfilename=/tmp/x\nlockmem=1g\n[a]\nexec_prerun=true\nsize=1m\nexitall_on_error\n";
    let e = plan(&sections(text), false).unwrap_err();
    let PlanError::Unsupported(list) = &e else {
        panic!("{e}")
    };
    let places: Vec<&str> = list.iter().map(|u| u.place.as_str()).collect();
    assert_eq!(places, ["t.fio:3", "t.fio:5", "t.fio:7"]);
    let msg = e.to_string();
    assert!(
        msg.starts_with("3 options csdchar does not implement: lockmem=1g (t.fio:3)"),
        "{msg}"
    );
    assert!(msg.contains("--ignore-unsupported"), "{msg}");
    let p = plan(&sections(text), true).unwrap();
    assert_eq!(p.ignored.len(), 3);
    assert_eq!(p.jobs[0].spec.rw, RwMode::Read);
}

#[test]
fn engines_map_or_are_named() {
    let p = plan_of("[a]\nioengine=libaio\nfilename=/x\nsize=1m\n");
    assert_eq!(p.jobs[0].replaced_engine.as_deref(), Some("libaio"));
    assert_eq!(p.jobs[0].spec.engine, EngineKind::Uring);
    let p = plan_of("[a]\nioengine=null\nsize=1m\n");
    assert_eq!(p.jobs[0].spec.engine, EngineKind::Null);
    assert_eq!(p.jobs[0].spec.target, None);
    let e = plan(&sections("[a]\nioengine=rbd\nfilename=/x\n"), false).unwrap_err();
    assert!(e.to_string().contains("ioengine=rbd (t.fio:2)"), "{e}");
}

#[test]
fn values_follow_fio_and_bad_ones_name_the_option() {
    let p = plan_of(
        "[a]\nfilename=/x\nbs=4k,16k\nrw=randread\nsize=(2*1m)\nruntime=2m\nramp_time=500ms\ntime_based\nrwmixwrite=30\niodepth=1k\npercentile_list=50:99:99.9\nbuffer_compress_percentage=75\nbuffer_compress_chunk=4k\n",
    );
    let s = &p.jobs[0].spec;
    assert_eq!(s.bs, 4096, "reads take the first of bs=R,W");
    assert_eq!(s.size, 2 << 20);
    assert_eq!(s.runtime_ms, Some(120_000));
    assert_eq!(s.ramp_time_ms, 500);
    assert!(s.time_based);
    assert_eq!(s.rwmixread, 70);
    assert_eq!(s.iodepth, 1024);
    assert_eq!(s.percentiles, [50.0, 99.0, 99.9]);
    assert_eq!((s.compress_pct, s.compress_chunk), (75, 4096));
    // Reads and writes of their own sizes: each direction's offsets in its own unit.
    let p = plan(&sections("[a]\nfilename=/x\nbs=4k,16k\nrw=randrw\n"), false).unwrap();
    let s = &p.jobs[0].spec;
    assert_eq!(
        (s.bs, s.unit_of(0), s.unit_of(1), s.max_bs()),
        (4096, 4096, 16384, 16384)
    );
    let e = plan(
        &sections("[a]\nfilename=/x\nbs=4k,16k\nrw=randrw\nrandom_distribution=zipf:1.2\n"),
        false,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("bs=4k,16k (t.fio:3)") && e.to_string().contains("skewed"),
        "{e}"
    );
    let e = plan(&sections("[a]\nfilename=/x\nrw=sideways\n"), false).unwrap_err();
    assert!(e.to_string().contains("rw=sideways (t.fio:3)"), "{e}");
    let e = plan(&sections("[a]\nfilename=/x\niodepth=0\n"), false).unwrap_err();
    assert!(e.to_string().contains("between 1 and 4096"), "{e}");
    let e = plan(&sections("[a]\nfilename=/x\ntime_based\n"), false).unwrap_err();
    assert!(e.to_string().contains("needs a runtime"), "{e}");
    let e = plan(&sections("[global]\nbs=4k\n"), false).unwrap_err();
    assert!(e.to_string().contains("no job section"), "{e}");
}

#[test]
fn a_printed_job_reads_back_as_the_same_spec() {
    let spec = BlockSpec {
        target: Some("/dev/zram1".into()),
        rw: RwMode::Randrw,
        rwmixread: 70,
        bs: 8192,
        iodepth: 32,
        numjobs: 4,
        size: 1 << 30,
        offset: 4096,
        runtime_ms: Some(30_000),
        time_based: true,
        ramp_time_ms: 2000,
        direct: true,
        seed: 7,
        compress_pct: 75,
        compress_chunk: 4096,
        compress_fill: Fill::Zeros,
        iodepth_batch_submit: 8,
        iodepth_batch_complete: 4,
        percentiles: vec![50.0, 99.0],
        ..BlockSpec::default()
    };
    let text = print_job(&spec, "csdchar block ...").unwrap();
    let p = plan_of(&text);
    assert_eq!(p.jobs.len(), 1);
    assert_eq!(p.jobs[0].spec, spec, "{text}");
    assert!(p.jobs[0].group_reporting);
}

/// Issue 38 row 6: a target fio's grammar cannot carry is refused, ':' is
/// escaped and reads back, and no argument of the command (in the comment)
/// can start a line of its own.
#[test]
fn print_job_carries_its_target_exactly_or_refuses_it() {
    let with = |t: &str| BlockSpec {
        target: Some(t.into()),
        rw: RwMode::Randwrite,
        size: 1 << 20,
        ..BlockSpec::default()
    };
    for bad in [
        "a;b.dat",
        "a#b",
        "x\n[evil]\nrw=write",
        " lead",
        "${HOME}/x",
        "$ncpus.dat",
    ] {
        let e = print_job(&with(bad), "csdchar").unwrap_err();
        assert!(e.0.starts_with("--print-job: TARGET"), "{e}");
        assert_eq!(e.0.lines().count(), 1, "{e}");
    }
    for good in [
        "/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
        "a\\:b",
        "x=y.dat",
    ] {
        let text = print_job(&with(good), "csdchar").unwrap();
        let p = plan_of(&text);
        assert_eq!(p.jobs[0].spec.target.as_deref(), Some(good), "{text}");
    }
    // A newline in any argument stays inside the comment line.
    let text = print_job(
        &with("data.dat"),
        "csdchar block --output x\n[evil]\nrw=write\nfilename=/dev/sda",
    )
    .unwrap();
    let p = plan_of(&text);
    assert_eq!(p.jobs.len(), 1, "{text}");
    assert_eq!(p.jobs[0].spec.target.as_deref(), Some("data.dat"));
    assert!(!text.contains("\n[evil]"), "{text}");
}

/// Issue 38 row 12: fio's limit of 4,096 jobs, clones included, refused with
/// the section that crosses it before any job is planned further.
#[test]
fn more_jobs_than_fios_limit_are_refused_at_the_section_that_crosses_it() {
    let mut text = String::from("[global]\nioengine=null\nsize=1m\n[big]\nnumjobs=1024\n");
    text.push_str("[b2]\nnumjobs=1024\n[b3]\nnumjobs=1024\n[b4]\nnumjobs=1023\n[last]\n");
    assert_eq!(plan_of(&text).jobs.len(), 5, "4,096 jobs are fine");
    text.push_str("[over]\n");
    let e = plan(&sections(&text), false).unwrap_err().to_string();
    assert!(
        e.starts_with("[over] (t.fio:13): the file holds more than 4096 jobs"),
        "{e}"
    );
}

/// Issue 38 row 21 and fio's directory rule: a generated file name never
/// leaves `directory`, and a filename is put in `directory` as fio does.
#[test]
fn directory_holds_the_files_it_should() {
    let e = plan(
        &sections("[global]\ndirectory=/d\nsize=1m\n[../../x]\nrw=write\n"),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("[../../x] (t.fio:4): a job without filename="),
        "{e}"
    );
    let e = plan(&sections("[j]\nname=a/b\nsize=1m\n"), false)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("name=a/b (t.fio:2)"), "{e}");
    let p = plan_of("[global]\ndirectory=/d\nsize=1m\n[j]\nfilename=f.dat\n[k]\n");
    assert_eq!(p.jobs[0].spec.target.as_deref(), Some("/d/f.dat"));
    assert_eq!(p.jobs[1].spec.target.as_deref(), Some("/d/k.0.0"));
    // Where each option was set, for refusals.
    assert_eq!(p.jobs[0].place_of("size"), "t.fio:3");
    assert_eq!(p.jobs[0].place_of("bs"), "t.fio:4");
}

/// fio copies every [global] option into each job: `stonewall` there
/// orders every job (was dropped); `wait_for` there is refused.
#[test]
fn ordering_options_in_global_are_every_jobs() {
    let p = plan_of("[global]\nioengine=null\nsize=1m\nstonewall\n[a]\n[b]\n[c]\n");
    let after: Vec<usize> = p.jobs.iter().map(|j| j.after_all).collect();
    assert_eq!(after, [0, 1, 2]);
    let groups: Vec<u32> = p.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, [0, 1, 2]);
    let e = plan(
        &sections("[a]\nioengine=null\n[global]\nwait_for=a\n[b]\n"),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("wait_for=a (t.fio:4): in [global]"), "{e}");
}

#[test]
fn a_section_with_no_options_of_its_own_is_a_job() {
    // fio: `[a]` then `[b]` after a [global] are two jobs, each with the
    // globals only (init.c __parse_jobs_ini makes a job per section).
    let p = plan_of("[global]\nioengine=null\nsize=1m\n[a]\n[b]\n");
    let names: Vec<&str> = p.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(p.jobs.iter().all(|j| j.job_options.is_empty()));
    // The last section empty, at the end of the file without a newline.
    let p = plan_of("[global]\nioengine=null\nsize=1m\n[only]");
    assert_eq!(p.jobs.len(), 1);
    // Only [global] sections: no job.
    let e = plan(&sections("[global]\nsize=1m\n[global2]\n"), false).unwrap_err();
    assert!(e.to_string().contains("no job section"), "{e}");
}

#[test]
fn trim_modes_are_fio_s() {
    for (mode, rw) in [
        ("trim", RwMode::Trim),
        ("randtrim", RwMode::Randtrim),
        ("trimwrite", RwMode::Trimwrite),
        ("randtrimwrite", RwMode::Randtrimwrite),
    ] {
        let p = plan_of(&format!("[a]\nfilename=/x\nsize=1m\nrw={mode}\n"));
        assert_eq!(p.jobs[0].spec.rw, rw);
    }
}

#[test]
fn rates_follow_fio_per_direction() {
    let p = plan_of(
        "[a]\nfilename=/x\nsize=1m\nrw=randrw\nrate=1m,500k\nrate_iops_min=,10\nrate_process=poisson\nrate_cycle=250\n",
    );
    let r = &p.jobs[0].spec.rate;
    assert_eq!(r.bytes_per_s, [1 << 20, 500 << 10, 500 << 10]);
    assert_eq!(r.min_iops, [0, 10, 10]);
    assert_eq!(r.process, crate::rate::RateProcess::Poisson);
    assert_eq!(r.cycle_ms, 250);
    let p = plan_of("[a]\nfilename=/x\nsize=1m\n");
    assert!(p.jobs[0].spec.rate.is_none());
    let e = plan(&sections("[a]\nfilename=/x\nrate_process=burst\n"), false).unwrap_err();
    assert!(e.to_string().contains("linear or poisson"), "{e}");
}

#[test]
fn loops_io_size_and_number_ios_are_fio_s() {
    let p = plan_of("[a]\nfilename=/x\nsize=1m\nio_size=8m\nnumber_ios=100\nloops=4\n");
    let s = &p.jobs[0].spec;
    assert_eq!((s.io_size, s.number_ios, s.loops), (8 << 20, 100, 4));
    let e = plan(&sections("[a]\nfilename=/x\nloops=0\n"), false).unwrap_err();
    assert!(e.to_string().contains("loops=0"), "{e}");
}

#[test]
fn logs_take_fio_s_names_and_job_numbers() {
    let p = plan_of(
        "[global]\nioengine=null\nsize=1m\n[a]\nnumjobs=2\nwrite_bw_log\nlog_avg_msec=100\nlog_max_value=2\n[b]\nwrite_lat_log=x/lat\nlog_offset=1\n",
    );
    let (a, b) = (&p.jobs[0].spec.logs, &p.jobs[1].spec.logs);
    assert_eq!(
        a.bw.as_deref(),
        Some("a"),
        "a bare option logs under the job's name"
    );
    assert_eq!((a.avg_msec, a.max_value, a.first_job), (100, 2, 1));
    assert_eq!(b.lat.as_deref(), Some("x/lat"));
    assert!(b.offset);
    assert_eq!(b.first_job, 3, "after a's two clones");
}

#[test]
fn steady_state_options_are_fio_s() {
    let p = plan_of("[a]\nfilename=/x\nsize=1m\nss=iops_slope:0.1%\nss_dur=1m\nss_ramp=10s\n");
    let s = &p.jobs[0].spec.steady_state;
    assert!(s.slope && s.pct && (s.limit - 0.1).abs() < 1e-12);
    assert_eq!((s.dur_s, s.ramp_ms), (60, 10_000));
    let e = plan(&sections("[a]\nfilename=/x\nsteadystate=lat:5%\n"), false).unwrap_err();
    assert!(e.to_string().contains("steadystate"), "{e}");
}

#[test]
fn offset_modifiers_are_sequential_only_and_whole_blocks() {
    let p = plan_of("[a]\nfilename=/x\nsize=1m\nrw=read:-8k\n");
    assert_eq!(
        (p.jobs[0].spec.rw, p.jobs[0].spec.rw_seq_add),
        (RwMode::Read, -8192)
    );
    let e = plan(&sections("[a]\nfilename=/x\nrw=randread:8\n"), false).unwrap_err();
    assert!(e.to_string().contains("random mode with :N"), "{e}");
    let e = plan(&sections("[a]\nfilename=/x\nrw=write:1k\n"), false).unwrap_err();
    assert!(e.to_string().contains("not a multiple of bs"), "{e}");
}

#[test]
fn hist_log_options_are_fio_s() {
    let p = plan_of(
        "[global]\nioengine=null\nsize=1m\n[a]\nwrite_hist_log\nlog_hist_msec=250\nlog_hist_coarseness=3\n[b]\nwrite_hist_log=h/b\n",
    );
    let (a, b) = (&p.jobs[0].spec.logs, &p.jobs[1].spec.logs);
    assert_eq!(
        (a.hist.as_deref(), a.hist_msec, a.hist_coarseness),
        (Some("a"), 250, 3)
    );
    assert_eq!(
        (b.hist.as_deref(), b.hist_msec, b.first_job),
        (Some("h/b"), 0, 2)
    );
    // fio's range for the coarseness is 0 to 6.
    let e = plan(
        &sections("[a]\nfilename=/x\nwrite_hist_log\nlog_hist_coarseness=7\n"),
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("log_hist_coarseness=7"), "{e}");
}

#[test]
fn dedupe_options_are_fio_s_whole_buffers() {
    let p = plan_of(
        "[global]\nioengine=null\nsize=64m\n[a]\nnumjobs=2\n[b]\ndedupe_percentage=30\n\
         dedupe_mode=working_set\ndedupe_working_set_percentage=10\ndedupe_global=1\n",
    );
    let b = &p.jobs[1].spec;
    assert_eq!(b.dedupe_pct, 0, "not csdchar's chunk dedupe");
    let d = &b.dedupe;
    assert_eq!(
        (d.pct, d.mode, d.working_set_pct),
        (30, DedupeMode::WorkingSet, 10)
    );
    assert!(d.global);
    assert_eq!(
        (d.first_thread, d.threads),
        (2, 3),
        "fio's threads, a's clones first"
    );
    assert!(p.jobs[0].spec.dedupe.is_none());
    // fio's defaults: repeat, a working set of 5%.
    let d = &plan_of("[a]\nfilename=/x\nsize=1m\ndedupe_percentage=5\n").jobs[0]
        .spec
        .dedupe;
    assert_eq!(
        (d.mode, d.working_set_pct, d.global),
        (DedupeMode::Repeat, 5, false)
    );
    for (bad, says) in [
        (
            "dedupe_percentage=96\ndedupe_mode=working_set\n",
            "at most 95%",
        ),
        (
            "dedupe_percentage=10\ndedupe_mode=ws\n",
            "repeat or working_set",
        ),
        (
            "dedupe_percentage=10\ndedupe_mode=working_set\ndedupe_working_set_percentage=1\nsize=64k\n",
            "holds no block",
        ),
    ] {
        let e = plan(
            &sections(&format!("[a]\nfilename=/x\nsize=1m\n{bad}")),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
    // csdchar's --dedupe prints as fio's nearest option, said in a comment.
    let spec = BlockSpec {
        target: Some("/x".into()),
        size: 1 << 20,
        dedupe_pct: 10,
        ..BlockSpec::default()
    };
    let text = print_job(&spec, "csdchar block").unwrap();
    assert!(
        text.contains("whole buffers\ndedupe_percentage=10\n"),
        "{text}"
    );
    assert_eq!(plan_of(&text).jobs[0].spec.dedupe.pct, 10);
}

#[test]
fn randrepeat_0_draws_new_seeds_unless_randseed_is_set() {
    let seed = |t: &str| plan_of(t).jobs[0].spec.seed;
    let fresh = "[global]\nfilename=/tmp/x\nsize=1m\nrw=randread\n[a]\nrandrepeat=0\n";
    assert_ne!(seed(fresh), seed(fresh));
    assert_eq!(seed(&format!("{fresh}randseed=7\n")), 7);
    assert_eq!(
        seed("[a]\nfilename=/tmp/x\nsize=1m\nrandrepeat=1\n"),
        FIO_RANDSEED
    );
}

#[test]
fn offset_increment_goes_to_threads_or_into_each_clone_s_offset() {
    let p = plan_of("[j]\nfilename=/tmp/x\nnumjobs=3\nsize=1m\noffset=4k\noffset_increment=1m\n");
    assert_eq!(
        (p.jobs[0].spec.offset, p.jobs[0].spec.offset_increment),
        (4096, 1 << 20)
    );
    let p = plan_of("[j]\ndirectory=/tmp/d\nnumjobs=3\nsize=1m\noffset=4k\noffset_increment=8k\n");
    let offsets: Vec<u64> = p.jobs.iter().map(|j| j.spec.offset).collect();
    assert_eq!(offsets, [4096, 12288, 20480]);
    let e = plan(
        &sections("[j]\nfilename=/tmp/x\nsize=1m\noffset_increment=10%\n"),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("offset_increment=10%"), "{e}");
}

#[test]
fn error_and_layout_options_parse_as_fio_s_or_are_named() {
    let err = |t: &str| plan(&sections(t), false).unwrap_err().to_string();
    let base = "[j]\nfilename=/tmp/x\nsize=1m\n";
    let e = err(&format!("{base}continue_on_error=sometimes\n"));
    assert!(e.contains("continue_on_error=sometimes: none, read"), "{e}");
    let e = err(&format!("{base}ignore_error=,EILSEQ\n"));
    assert!(e.contains("unknown error EILSEQ"), "{e}");
    let e = err(&format!("{base}fallocate=maybe\n"));
    assert!(e.contains("fallocate=maybe: none, native"), "{e}");
    let e = err(&format!("{base}create_serialize=1\n"));
    assert!(e.contains("create_serialize=1"), "{e}");
    plan_of(&format!("{base}create_serialize=0\n"));
    let e = err(&format!("{base}rw=read\nfill_device=1\n"));
    assert!(e.contains("fill_device=1"), "{e}");
    let p = plan_of(&format!(
        "{base}rw=write\nignore_error=,ENOSPC:5\nverify_fatal=1\n"
    ));
    let errors = &p.jobs[0].spec.errors;
    assert!(errors.fio_rules && errors.continue_on == 2 && errors.verify_fatal);
    assert_eq!(errors.ignore[1], [28, 5]);
    let p = plan_of(&format!(
        "{base}rw=write\ncreate_on_open=1\nfallocate=native\n"
    ));
    assert_eq!(
        p.jobs[0].spec.fallocate,
        crate::result::block::Fallocate::None
    );
    // In a job that reads: not laid out, a short read as fio's engine kind
    // takes it (psync is fio's default).
    use crate::result::block::CreateOnOpen;
    for (engine, want) in [
        ("", CreateOnOpen::Fails),
        ("ioengine=psync\n", CreateOnOpen::Fails),
        ("ioengine=sync\n", CreateOnOpen::Fails),
        ("ioengine=libaio\n", CreateOnOpen::Counted),
        ("ioengine=io_uring\n", CreateOnOpen::Counted),
    ] {
        let p = plan_of(&format!("{base}rw=randrw\ncreate_on_open=1\n{engine}"));
        assert_eq!(p.jobs[0].spec.create_on_open, want, "{engine}");
    }
    let p = plan_of(&format!(
        "{base}rw=write\ncreate_on_open=1\nioengine=libaio\n"
    ));
    assert_eq!(p.jobs[0].spec.create_on_open, CreateOnOpen::No);
    assert!(
        plan_of(&format!("{base}rw=write\n")).jobs[0]
            .spec
            .errors
            .is_none()
    );
}

#[test]
fn verify_meta_and_verify_interval_are_fio_s() {
    let base = "[j]\nfilename=/tmp/x\nsize=1m\nrw=write\nbs=64k\n";
    let spec = |extra: &str| plan_of(&format!("{base}{extra}")).jobs[0].spec.clone();
    let s = spec("verify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n");
    assert!(s.verify && s.verify_meta);
    assert_eq!(s.verify_interval, 512);
    assert_eq!(s.verify_pattern, [0xaa, 0x55, 0x5a, 0xa5]);
    let s = spec("verify=crc32c\nverify_interval=4k\n");
    assert!(s.verify && !s.verify_meta);
    assert_eq!(s.verify_interval, 4096);
    // fio's fixup: over bs, or not dividing it, the whole block.
    assert_eq!(
        spec("verify=crc32c\nverify_interval=128k\n").verify_interval,
        0
    );
    assert_eq!(
        spec("verify=crc32c\nverify_interval=1000\n").verify_interval,
        0
    );
    let e = plan(
        &sections(&format!("{base}verify=meta\nverify_interval=64\n")),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("verify_interval=64: at least 80"), "{e}");
}

#[test]
fn verify_backlog_dump_and_logged_verify_are_taken_or_named() {
    let err = |t: &str| plan(&sections(t), false).unwrap_err().to_string();
    let base = "[j]\nfilename=/tmp/x\nsize=1m\nverify=crc32c\n";
    let p = plan_of(&format!(
        "{base}rw=write:112k\nbs=16k\nio_size=512k\nloops=2\nverify_backlog=1\nverify_dump=1\n"
    ));
    let s = &p.jobs[0].spec;
    assert!(s.verify && s.verify_dump);
    assert_eq!((s.verify_backlog, s.loops, s.rw_seq_add), (1, 2, 112 << 10));
    let p = plan_of(&format!(
        "{base}rw=write\nverify_backlog=8\nverify_backlog_batch=8\n"
    ));
    assert_eq!(p.jobs[0].spec.verify_backlog, 8);
    // do_verify=0 checks nothing itself: no backlog.
    let p = plan_of(&format!("{base}rw=write\nverify_backlog=8\ndo_verify=0\n"));
    assert_eq!(p.jobs[0].spec.verify_backlog, 0);
    // fio's batch, at any depth; in random and mixed jobs too.
    let p = plan_of(&format!(
        "{base}rw=write\nverify_backlog=8\nverify_backlog_batch=4\niodepth=16\n"
    ));
    let s = &p.jobs[0].spec;
    assert_eq!((s.verify_backlog, s.verify_batch, s.iodepth), (8, 4, 16));
    // fio 3.33 has no verify_batch: "Bad option".
    let e = err(&format!(
        "{base}rw=write\nverify_backlog=8\nverify_batch=4\n"
    ));
    assert!(e.contains("verify_batch=4"), "{e}");
    for rw in ["randwrite", "randrw", "rw"] {
        let p = plan_of(&format!("{base}rw={rw}\nverify_backlog=8\n"));
        assert_eq!(p.jobs[0].spec.verify_backlog, 8, "{rw}");
        assert!(p.jobs[0].spec.verify, "{rw}");
    }
    let e = err(&format!("{base}rw=randtrim\nverify_backlog=8\n"));
    assert!(e.contains("verify in a job that trims"), "{e}");
    let e = err(&format!("{base}rw=randwrite\nio_size=512k\n"));
    assert!(e.contains("other than a sequential rw=write"), "{e}");
    let e = err(&format!("{base}rw=write\nbssplit=4k/50:8k/50\nloops=2\n"));
    assert!(e.contains("bssplit=4k/50:8k/50"), "{e}");
    let e = err(&format!("{base}rw=write\nverify_dump=maybe\n"));
    assert!(e.contains("verify_dump"), "{e}");
}

#[test]
fn one_file_s_filesize_is_fio_s_region_and_size_its_io() {
    let base = "[j]\nfilename=/tmp/x\nbs=4k\n";
    let spec = |extra: &str| plan_of(&format!("{base}{extra}")).jobs[0].spec.clone();
    let m = 1u64 << 20;
    let s = spec("rw=randwrite\nfilesize=2m\nsize=1m\n");
    assert_eq!((s.size, s.offset, s.io_size), (2 * m, 0, m));
    let s = spec("rw=randwrite\nfilesize=1m\nsize=999g\n");
    assert_eq!((s.size, s.io_size), (m, 0));
    let s = spec("rw=read\nfilesize=2m\noffset=512k\n");
    assert_eq!((s.size, s.offset, s.io_size), (3 * m / 2, m / 2, 0));
    let s = spec("rw=read\nfilesize=2m\nsize=1m\nio_size=3m\n");
    assert_eq!((s.size, s.io_size), (2 * m, 3 * m));
    let refused = |extra: &str| plan(&sections(&format!("{base}{extra}")), false).unwrap_err();
    for (extra, says) in [
        (
            "rw=write\nfilesize=1m-2m\nsize=1m\n",
            "a range of file sizes",
        ),
        (
            "rw=write\nfilesize=2m\nnumjobs=2\noffset_increment=1m\n",
            "filesize with offset_increment",
        ),
        (
            "rw=randwrite\nfilesize=2m\nsize=1m\nverify=crc32c\n",
            "verify with a file larger than size=",
        ),
        ("rw=write\nfilesize=1m\noffset=2m\n", "valid offset="),
    ] {
        let e = refused(extra).to_string();
        assert!(e.contains(says), "{extra}: {e}");
    }
    // A sequential write checks the blocks it wrote.
    let s = spec("rw=write\nfilesize=2m\nsize=1m\nverify=crc32c\n");
    assert!(s.verify && s.io_size == m);
}
