//! Rows streamed into `COPY … FROM STDIN`, as every loader sends them: written
//! into one buffer and sent to the server a chunk of about 1 MiB at a time, with
//! the rows each chunk carried, for the load's progress.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::{Client, CopyInSink};

use csdchar_pgwire::error::{DbError, db_err};

/// Bytes gathered before they are sent: large enough that the round trips do
/// not show, small enough that progress moves.
pub const CHUNK: usize = 1 << 20;

/// One `COPY … FROM STDIN` in progress.
pub struct CopyIn {
    sink: Pin<Box<CopyInSink<Bytes>>>,
    /// The rows not sent yet: loaders write into it (text or binary COPY rows).
    pub buf: Vec<u8>,
    /// Rows written since the last chunk was sent.
    pending: u64,
    /// What is loaded, for messages (`loading sbtest1`).
    what: String,
}

impl CopyIn {
    /// Starts `sql` (a `COPY … FROM STDIN`); errors name `what`.
    pub async fn start(client: &Client, sql: &str, what: &str) -> Result<CopyIn, DbError> {
        let sink = client
            .copy_in::<_, Bytes>(sql)
            .await
            .map_err(|e| db_err(what, e))?;
        Ok(CopyIn {
            sink: Box::pin(sink),
            buf: Vec::with_capacity(CHUNK + 4096),
            pending: 0,
            what: what.to_string(),
        })
    }

    /// A row was written into [`CopyIn::buf`]; true once a chunk is ready for
    /// [`CopyIn::send`].
    pub fn row_done(&mut self) -> bool {
        self.pending += 1;
        self.buf.len() >= CHUNK
    }

    /// Sends what is buffered; the rows it carried.
    pub async fn send(&mut self) -> Result<u64, DbError> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK + 4096));
        if !chunk.is_empty() {
            self.sink
                .send(Bytes::from(chunk))
                .await
                .map_err(|e| db_err(&self.what, e))?;
        }
        Ok(std::mem::take(&mut self.pending))
    }

    /// Sends `text` (already whole COPY rows) in chunks.
    pub async fn send_all(&mut self, text: Bytes) -> Result<(), DbError> {
        let mut at = 0;
        while at < text.len() {
            let end = (at + CHUNK).min(text.len());
            self.sink
                .send(text.slice(at..end))
                .await
                .map_err(|e| db_err(&self.what, e))?;
            at = end;
        }
        Ok(())
    }

    /// Sends the rest and ends the COPY; the rows the last chunk carried.
    pub async fn finish(mut self) -> Result<u64, DbError> {
        let rows = self.send().await?;
        self.sink
            .as_mut()
            .finish()
            .await
            .map_err(|e| db_err(&self.what, e))?;
        Ok(rows)
    }
}
