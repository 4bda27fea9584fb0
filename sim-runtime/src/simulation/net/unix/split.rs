//! `UnixStream` halves, borrowed (`split`) and owned (`into_split`): the
//! same as TCP's (`shared::stream_halves!`).

use super::{SocketAddr, UnixStream};
use crate::simulation::net::shared::stream_halves;

stream_halves!(UnixStream, SocketAddr);
