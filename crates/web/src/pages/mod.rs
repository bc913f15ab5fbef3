//! The page layer both sites of HTML pages share: the partner portal
//! ([`super::portal`], `/partner/`) and the owner's dashboard ([`super::console`],
//! `/app/`).
//!
//! Pages are askama templates (`templates/`) filled by handlers that call the service
//! layer ([`reftrack_service`]) directly. What they share is here: the frame of a page and its
//! error pages ([`view`]), session cookies and the same-origin rule of forms
//! ([`session`]), the sign-in page ([`sign_in`]), the daily bar charts ([`chart`]) and
//! their date-range picker ([`range`]), and the one stylesheet and script under
//! `/assets/` ([`assets`]). None of it is part of the OpenAPI document.

pub mod assets;
pub mod chart;
pub mod range;
pub mod session;
pub mod sign_in;
pub mod two_factor;
pub mod view;
