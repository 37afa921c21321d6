//! Control frames on a connection: RST_STREAM from the client (spent
//! from the reset budget), SETTINGS (the client's, and its ACK of ours,
//! which times the round trip), WINDOW_UPDATE credit for what the server
//! sends.

use super::super::frame::MAX_WINDOW;
use super::super::frame::{self, flag, kind, setting, ErrorCode, Header, DEFAULT_MAX_FRAME};
use super::super::hpack::ENCODER_TABLE_CAP;
use super::{Core, Event, Fatal, Send};
use std::time::Instant;

impl Core {
    pub(super) fn rst_frame(&mut self, h: Header, p: &[u8]) -> Result<(), Fatal> {
        if h.stream == 0 {
            return Err((ErrorCode::Protocol, "RST_STREAM on stream 0"));
        }
        if p.len() != 4 {
            return Err((ErrorCode::FrameSize, "RST_STREAM not 4 octets"));
        }
        if self.is_idle(h.stream) {
            return Err((ErrorCode::Protocol, "RST_STREAM on an idle stream"));
        }
        self.tally.resets_received += 1;
        let Some(i) = self.position(h.stream) else {
            return Ok(());
        };
        self.close_window(i);
        let s = self.streams.remove(i);
        if s.handed {
            self.events.push_back(Event::Cancel { stream: s.id });
        }
        if s.send != Send::Done {
            self.spend_reset()?;
        }
        Ok(())
    }

    pub(super) fn spend_reset(&mut self) -> Result<(), Fatal> {
        self.reset_budget -= 1;
        if self.reset_budget <= 0 {
            return Err((ErrorCode::EnhanceYourCalm, "too many streams reset"));
        }
        Ok(())
    }

    pub(super) fn settings_frame(
        &mut self,
        h: Header,
        p: &[u8],
        now: Instant,
    ) -> Result<(), Fatal> {
        if h.stream != 0 {
            return Err((ErrorCode::Protocol, "SETTINGS on a stream"));
        }
        if h.has(flag::ACK) {
            if !p.is_empty() {
                return Err((ErrorCode::FrameSize, "a SETTINGS ACK with a payload"));
            }
            // The round trip a streamed body's window grows by.
            if self.rtt.is_none() {
                self.rtt = Some(now.saturating_duration_since(self.settings_sent));
            }
            return Ok(());
        }
        if !p.len().is_multiple_of(6) {
            return Err((ErrorCode::FrameSize, "SETTINGS not a multiple of 6 octets"));
        }
        self.spend(now)?;
        for entry in p.chunks_exact(6) {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            match id {
                setting::HEADER_TABLE_SIZE => {
                    self.encoder
                        .set_table_max((value as usize).min(ENCODER_TABLE_CAP));
                }
                setting::ENABLE_PUSH if value > 1 => {
                    return Err((ErrorCode::Protocol, "SETTINGS_ENABLE_PUSH not 0 or 1"));
                }
                setting::INITIAL_WINDOW_SIZE => {
                    let value = i64::from(value);
                    if value > MAX_WINDOW {
                        return Err((
                            ErrorCode::FlowControl,
                            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    let delta = value - self.peer_initial_window;
                    self.peer_initial_window = value;
                    for s in &mut self.streams {
                        s.send_window += delta;
                        if s.send_window > MAX_WINDOW {
                            return Err((ErrorCode::FlowControl, "a stream window above 2^31-1"));
                        }
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(DEFAULT_MAX_FRAME as u32..=(1 << 24) - 1).contains(&value) {
                        return Err((ErrorCode::Protocol, "SETTINGS_MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = value as usize;
                }
                _ => {}
            }
        }
        frame::put_header(&mut self.out, 0, kind::SETTINGS, flag::ACK, 0);
        Ok(())
    }

    pub(super) fn window_update(&mut self, h: Header, p: &[u8], now: Instant) -> Result<(), Fatal> {
        if p.len() != 4 {
            return Err((ErrorCode::FrameSize, "WINDOW_UPDATE not 4 octets"));
        }
        self.spend(now)?;
        let increment = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
        if h.stream == 0 {
            if increment == 0 {
                return Err((ErrorCode::Protocol, "WINDOW_UPDATE of 0 on the connection"));
            }
            self.send_window += increment;
            if self.send_window > MAX_WINDOW {
                return Err((ErrorCode::FlowControl, "the connection window above 2^31-1"));
            }
            return Ok(());
        }
        if self.is_idle(h.stream) {
            return Err((ErrorCode::Protocol, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(s) = self.stream_mut(h.stream) else {
            return Ok(());
        };
        if increment == 0 {
            return self.stream_error(h.stream, ErrorCode::Protocol);
        }
        s.send_window += increment;
        if s.send_window > MAX_WINDOW {
            return self.stream_error(h.stream, ErrorCode::FlowControl);
        }
        Ok(())
    }
}
