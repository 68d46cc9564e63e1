//! One self-contained HTML page: inline CSS, tables, inline SVG. Nothing is
//! fetched when it opens.

use crate::load::ReportInput;
use crate::model::INTERVAL_COLUMNS;
use crate::plots::Plot;
use crate::tables::Table;

/// Escapes text for HTML content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1320px;color:#1d1d1f;padding:0 1rem}\
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}\
p.note{color:#555;font-size:.9rem}table{border-collapse:collapse;font-size:.82rem;margin:.6rem 0}\
th,td{border:1px solid #d0d0d0;padding:.25rem .5rem}th{background:#f2f4f7;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafbfc}\
figure{margin:1.2rem 0}figcaption{font-size:.9rem;color:#333;margin-bottom:.3rem}\
figure svg{max-width:100%;height:auto;border:1px solid #eee}.scroll{overflow-x:auto}code{font-size:.85rem}";

fn table_html(t: &Table) -> String {
    let mut out = format!(
        "<h2 id=\"{}\">{}</h2>\n<p class=\"note\">{}</p>\n<div class=\"scroll\"><table>\n<thead><tr>",
        escape(&t.name),
        escape(&t.title),
        escape(&t.note)
    );
    for c in t.shown_columns() {
        out.push_str(&format!("<th>{}</th>", escape(c)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in t.shown_cells(row) {
            let class = if c.is_numeric() { " class=\"n\"" } else { "" };
            out.push_str(&format!("<td{class}>{}</td>", escape(&c.display())));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// The page.
pub fn render(title: &str, inputs: &[ReportInput], tables: &[Table], plots: &[Plot]) -> String {
    let mut body = format!("<h1>{}</h1>\n", escape(title));
    body.push_str("<h2 id=\"inputs\">Inputs</h2>\n<div class=\"scroll\"><table><thead><tr><th>label</th><th>kind</th><th>file</th><th>status</th></tr></thead><tbody>\n");
    for i in inputs {
        let status = i.status_note().map_or("complete".to_string(), |n| {
            format!("<strong>{}</strong>", escape(&n))
        });
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{status}</td></tr>\n",
            escape(&i.label),
            i.kind(),
            escape(&i.path.display().to_string())
        ));
    }
    body.push_str("</tbody></table></div>\n");
    for t in tables {
        body.push_str(&table_html(t));
    }
    if !plots.is_empty() {
        body.push_str("<h2 id=\"plots\">Charts</h2>\n");
        for p in plots {
            // The SVG document's XML declaration is not allowed inside HTML.
            let svg = p
                .svg
                .trim_start()
                .strip_prefix("<?xml")
                .and_then(|rest| rest.split_once("?>").map(|(_, s)| s))
                .unwrap_or(&p.svg);
            body.push_str(&format!(
                "<figure id=\"{}\"><figcaption>{}</figcaption>\n{}\n</figure>\n",
                escape(&p.name),
                escape(&p.title),
                svg.trim()
            ));
        }
    }
    body.push_str("<h2 id=\"exports\">Exports</h2>\n<p class=\"note\">intervals.parquet and intervals.csv hold every interval sample of every input, one row each, with these columns:</p>\n<div class=\"scroll\"><table><thead><tr><th>column</th><th>type</th><th>meaning</th></tr></thead><tbody>\n");
    for c in INTERVAL_COLUMNS {
        body.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
            c.name,
            c.dtype,
            escape(c.doc)
        ));
    }
    body.push_str("</tbody></table></div>\n");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}
