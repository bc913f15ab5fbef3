//! Money: commissions' changes, balances and payouts ([`payouts`]), and the files that
//! carry them out (CSV, PayPal, Wise: [`exports`]).

pub mod exports;
pub mod payouts;
