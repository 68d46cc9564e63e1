//! pgbench custom-script results (issue 41): per label, clients, script and statement,
//! pgbench's `-r` figures (executions, mean latency, failures, retries) of `db` results and
//! of a study's runs, so one script's statements compare across drives and fillfactors.

use csdchar_core::result::db::DbStep;

use crate::load::{LoadedResult, ReportInput};
use crate::tables::{Cell, Table};

fn rows_of(label: &str, fillfactor: Option<u8>, steps: &[DbStep], out: &mut Vec<Vec<Cell>>) {
    for s in steps {
        let Some(sc) = &s.script else { continue };
        for x in &sc.scripts {
            for c in &x.commands {
                out.push(vec![
                    Cell::Text(label.to_string()),
                    Cell::Text(fillfactor.map_or("-".into(), |f| f.to_string())),
                    Cell::Num(f64::from(s.threads), 0),
                    Cell::Text(x.name.clone()),
                    Cell::Num(f64::from(c.line), 0),
                    Cell::Text(c.text.clone()),
                    Cell::Num(c.executions as f64, 0),
                    Cell::Num(c.latency_avg_ms, 3),
                    Cell::Num(c.failures as f64, 0),
                    Cell::Num(c.retries as f64, 0),
                ]);
            }
        }
    }
}

/// The statements' table, None when no input ran a script.
pub fn script_statements_table(inputs: &[ReportInput]) -> Option<Table> {
    let mut rows = Vec::new();
    for i in inputs {
        match &i.result {
            LoadedResult::Db(d) => rows_of(&i.label, d.spec.fillfactor, &d.steps, &mut rows),
            LoadedResult::Study(st) => {
                for run in &st.runs {
                    rows_of(&i.label, Some(run.fillfactor), &run.steps, &mut rows);
                }
            }
            _ => {}
        }
    }
    (!rows.is_empty()).then(|| Table {
        name: "script_statements".into(),
        title: "pgbench script statements".into(),
        note: "pgbench's -r per statement: executions, mean latency of its successful executions \
               (ms), failed transactions that ended there, retries after an error there"
            .into(),
        columns: [
            "label",
            "fillfactor",
            "clients",
            "script",
            "line",
            "statement",
            "executions",
            "latency ms",
            "failures",
            "retries",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        csv_only_from: None,
    })
}
