//! One measured-loop exchange against a PostgreSQL cluster csdchar manages
//! itself: sysbench's point select (prepared, one Bind/Execute/Sync round
//! trip) over the cluster's private socket, client and server on this
//! machine. Needs the PostgreSQL server binaries (root runs the server as
//! `postgres`); without them it says why and measures nothing. Figures go to
//! the log only.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType};
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_pgwire::conn::ConnTarget;
use csdchar_pgwire::env::ProcessEnv;
use csdchar_pgwire::message::Param;
use csdchar_pgwire::wire::WireConn;
use csdchar_workloads::oltp::{self, OltpSpec};

const ROWS: u64 = 10_000;

fn db_client(c: &mut Criterion) {
    let cluster = match ManagedCluster::start(&ClusterSpec::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skipping db_client: no managed PostgreSQL cluster here ({e})");
            return;
        }
    };
    let conninfo = cluster.conninfo("postgres");
    let spec = OltpSpec {
        workload: OltpWorkload::PointSelect,
        tables: 1,
        table_size: ROWS,
        range_size: 100,
        options: OltpOptions::default(),
        rand_type: RandType::Uniform,
        fillfactor: None,
        string_dup: 0,
        create_secondary: false,
        seed: 1,
        schema: "public".into(),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Err(e) = rt.block_on(oltp::prepare(&conninfo, &spec, 1, true, Arc::new(|_| {}))) {
        eprintln!("skipping db_client: cannot load the table ({e})");
        return;
    }
    let target = ConnTarget::parse(&conninfo, &ProcessEnv).expect("conninfo");
    let mut conn = WireConn::connect(&target, None).expect("connect");
    conn.prepare(&[(
        "point".to_string(),
        "SELECT c FROM sbtest1 WHERE id=$1".to_string(),
    )])
    .expect("prepare");
    let mut group = c.benchmark_group("db_client");
    group.throughput(Throughput::Elements(1));
    let mut id = 0i64;
    group.bench_function("wire/point_select/socket", |b| {
        b.iter(|| {
            id = id % ROWS as i64 + 1;
            conn.queue("point", &[Param::Int(id)]).expect("queue");
            let reply = conn.sync().expect("exchange");
            assert!(reply.error.is_none());
        })
    });
    group.finish();
    drop(conn);
    drop(cluster);
}

criterion_group!(benches, db_client);
criterion_main!(benches);
