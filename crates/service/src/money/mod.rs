//! Money: commissions' changes, balances and payouts ([`payouts`]), and the files that
//! carry them out (CSV, PayPal, Wise: [`exports`]); the fraud rules' review queue and the
//! purge of the IPs they keep ([`review`]); an owner's bonuses ([`bonuses`]); exchange
//! rates and the conversion of sales in other currencies ([`rates`]).

pub mod bonuses;
pub mod exports;
pub mod payouts;
pub mod rates;
pub mod review;
