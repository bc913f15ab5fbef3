//! Fraud rules: what a program does with a commission whose sale looks like fraud. Each
//! [`Rule`] has an [`Action`] in the program's [`FraudRules`]: `off`, `flag` (the
//! commission waits for an owner whatever the hold) or `reject` (it is created
//! `rejected`, the rule its reason). [`verdict`] applies them to the [`SaleFacts`] the
//! sale's flow gathered; [`lifecycle::approval`](crate::lifecycle::approval) turns the
//! verdict into the commission's state.

use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::self_referral;
use crate::status::CommissionFlag;
use crate::time::DAY_MS;

/// How far back `duplicate_ip` and `partner_ip` look: 30 days.
pub const LOOKBACK_MS: i64 = 30 * DAY_MS;

/// A sale less than this long after the customer's click is a fast conversion: 10 s.
pub const FAST_CONVERSION_MS: i64 = 10_000;

/// How long the IPs these rules read are kept (a click's IP, the IPs customers converted
/// from, a partner's sign-in IPs): 90 days, three times what the rules look back, so that
/// a rule turned on finds the history it needs. The periodic job purges older ones.
pub const IP_RETENTION_DAYS: i64 = 90;

/// [`IP_RETENTION_DAYS`] in milliseconds.
pub const IP_RETENTION_MS: i64 = IP_RETENTION_DAYS * DAY_MS;

/// A fraud rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The customer's email is the partner's.
    SelfReferral,
    /// The customer's email is at a known disposable-mail domain.
    DisposableEmail,
    /// The customer's click came from an IP another customer of the partner converted from.
    DuplicateIp,
    /// The customer's click came from an IP the partner signed in to the portal from.
    PartnerIp,
    /// The sale came less than [`FAST_CONVERSION_MS`] after the customer's click.
    FastConversion,
}

impl Rule {
    /// Every rule, in the order they are shown.
    pub const ALL: [Rule; 5] = [
        Rule::SelfReferral,
        Rule::DisposableEmail,
        Rule::DuplicateIp,
        Rule::PartnerIp,
        Rule::FastConversion,
    ];

    /// The rule's name, as the API and the stored settings write it.
    pub fn as_str(self) -> &'static str {
        self.flag().as_str()
    }

    /// The commission flag the rule adds when it holds.
    pub fn flag(self) -> CommissionFlag {
        match self {
            Rule::SelfReferral => CommissionFlag::SelfReferral,
            Rule::DisposableEmail => CommissionFlag::DisposableEmail,
            Rule::DuplicateIp => CommissionFlag::DuplicateIp,
            Rule::PartnerIp => CommissionFlag::PartnerIp,
            Rule::FastConversion => CommissionFlag::FastConversion,
        }
    }

    /// The rule of a commission flag.
    pub fn of_flag(flag: CommissionFlag) -> Rule {
        match flag {
            CommissionFlag::SelfReferral => Rule::SelfReferral,
            CommissionFlag::DisposableEmail => Rule::DisposableEmail,
            CommissionFlag::DuplicateIp => Rule::DuplicateIp,
            CommissionFlag::PartnerIp => Rule::PartnerIp,
            CommissionFlag::FastConversion => Rule::FastConversion,
        }
    }

    /// The rule of a name; `None` for an unknown one.
    pub fn parse(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The action a new program gives the rule.
    pub fn default_action(self) -> Action {
        match self {
            Rule::SelfReferral | Rule::DisposableEmail => Action::Flag,
            Rule::DuplicateIp | Rule::PartnerIp | Rule::FastConversion => Action::Off,
        }
    }

    /// What the rule found, in words, for the review page.
    pub fn reason(self) -> &'static str {
        match self {
            Rule::SelfReferral => "The customer's email is the partner's own",
            Rule::DisposableEmail => "The customer's email is at a disposable-mail domain",
            Rule::DuplicateIp => {
                "The click came from an IP another customer of this partner bought from in the \
                 last 30 days"
            }
            Rule::PartnerIp => {
                "The click came from an IP the partner signed in from in the last 30 days"
            }
            Rule::FastConversion => "The sale came less than 10 seconds after the click",
        }
    }

    /// The rule's short name, for a settings form.
    pub fn label(self) -> &'static str {
        match self {
            Rule::SelfReferral => "Self-referral",
            Rule::DisposableEmail => "Disposable email",
            Rule::DuplicateIp => "Duplicate IP",
            Rule::PartnerIp => "Partner's IP",
            Rule::FastConversion => "Fast conversion",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a program does with a commission when a rule holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Nothing: the rule is not applied and adds no flag.
    Off,
    /// The commission is flagged and waits for an owner's approval.
    Flag,
    /// The commission is created `rejected`, the rule its reason.
    Reject,
}

impl Action {
    /// Every action, weakest first.
    pub const ALL: [Action; 3] = [Action::Off, Action::Flag, Action::Reject];

    /// The action's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Off => "off",
            Action::Flag => "flag",
            Action::Reject => "reject",
        }
    }

    /// The action of a name; `None` for an unknown one.
    pub fn parse(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A program's action per rule. Serialized as a JSON object naming all five rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FraudRules([Action; 5]);

impl Default for FraudRules {
    fn default() -> Self {
        FraudRules(Rule::ALL.map(Rule::default_action))
    }
}

/// A fraud-rules object that names an unknown rule or action, or is no object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FraudRulesError {
    /// Not a JSON object of rule names to action names.
    NotAnObject,
    /// A rule that does not exist.
    UnknownRule(String),
    /// An action that does not exist, for the named rule.
    UnknownAction {
        /// The rule it was given for.
        rule: Rule,
        /// What was given, as JSON.
        value: String,
    },
}

impl fmt::Display for FraudRulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |names: &[&str]| names.join(", ");
        match self {
            FraudRulesError::NotAnObject => write!(
                f,
                "fraud_rules must be an object of rule names to actions (off, flag, reject)"
            ),
            FraudRulesError::UnknownRule(name) => write!(
                f,
                "fraud_rules: unknown rule \"{name}\"; the rules are {}",
                names(&Rule::ALL.map(Rule::as_str))
            ),
            FraudRulesError::UnknownAction { rule, value } => write!(
                f,
                "fraud_rules.{rule} must be one of: {} (got {value})",
                names(&Action::ALL.map(Action::as_str))
            ),
        }
    }
}

impl std::error::Error for FraudRulesError {}

/// Some rules' new actions, as a change to a program names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FraudRulesPatch(pub Vec<(Rule, Action)>);

impl FraudRulesPatch {
    /// Reads a JSON object naming only the rules to change (`{"disposable_email":
    /// "reject"}`); an unknown rule or action is an error that names it.
    pub fn parse(value: &serde_json::Value) -> Result<FraudRulesPatch, FraudRulesError> {
        let object = value.as_object().ok_or(FraudRulesError::NotAnObject)?;
        let mut changes = Vec::with_capacity(object.len());
        for (name, action) in object {
            let rule =
                Rule::parse(name).ok_or_else(|| FraudRulesError::UnknownRule(name.clone()))?;
            let action = action.as_str().and_then(Action::parse).ok_or_else(|| {
                FraudRulesError::UnknownAction {
                    rule,
                    value: action.to_string(),
                }
            })?;
            changes.push((rule, action));
        }
        Ok(FraudRulesPatch(changes))
    }
}

impl FraudRules {
    /// Every rule with the same action (a benchmark's "all on" is `all(Action::Flag)`).
    pub fn all(action: Action) -> FraudRules {
        FraudRules([action; 5])
    }

    /// The action of `rule`.
    pub fn get(&self, rule: Rule) -> Action {
        self.0[rule.index()]
    }

    /// Sets the action of `rule`.
    pub fn set(&mut self, rule: Rule, action: Action) {
        self.0[rule.index()] = action;
    }

    /// Whether `rule` is applied (its action is not `off`).
    pub fn is_on(&self, rule: Rule) -> bool {
        self.get(rule) != Action::Off
    }

    /// Each rule with its action, in [`Rule::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Rule, Action)> + '_ {
        Rule::ALL.into_iter().map(|r| (r, self.get(r)))
    }

    /// These rules with `patch`'s changes; the rules it does not name keep their action.
    pub fn merge(&self, patch: &FraudRulesPatch) -> FraudRules {
        let mut merged = *self;
        for &(rule, action) in &patch.0 {
            merged.set(rule, action);
        }
        merged
    }

    /// Reads rules as stored or sent whole: a JSON object; a rule it leaves out has its
    /// default action.
    pub fn parse(value: &serde_json::Value) -> Result<FraudRules, FraudRulesError> {
        Ok(FraudRules::default().merge(&FraudRulesPatch::parse(value)?))
    }

    /// Reads rules from their stored JSON text ([`FraudRules::to_json`]).
    pub fn from_json(text: &str) -> Result<FraudRules, FraudRulesError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|_| FraudRulesError::NotAnObject)?;
        FraudRules::parse(&value)
    }

    /// The rules as a JSON object naming all five.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for FraudRules {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(Rule::ALL.len()))?;
        for (rule, action) in self.iter() {
            map.serialize_entry(rule.as_str(), &action)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for FraudRules {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        FraudRules::parse(&value).map_err(serde::de::Error::custom)
    }
}

/// The disposable-mail domains: the list the `mailchecker` crate maintains, read into a
/// set once.
fn disposable_domains() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| mailchecker::blacklist().into_iter().collect())
}

/// Whether `email`'s domain, or a domain it is a subdomain of, is a known disposable-mail
/// domain (case and surrounding space ignored). Text without an `@` is no address: false.
pub fn is_disposable(email: &str) -> bool {
    let email = email.trim().to_ascii_lowercase();
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let domain = domain.trim_end_matches('.');
    let set = disposable_domains();
    let mut rest = domain;
    loop {
        if set.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if !parent.is_empty() => rest = parent,
            _ => return false,
        }
    }
}

/// What a sale (or a lead) carries that the rules read. The flow gathers only what the
/// rules that are on need; a fact left out reads as "does not hold".
#[derive(Debug, Clone, Default)]
pub struct SaleFacts<'a> {
    /// The customer's emails (its lead's, the sale's).
    pub customer_emails: Vec<&'a str>,
    /// The partner's emails (contact and sign-in).
    pub partner_emails: Vec<&'a str>,
    /// Whether another customer of the same partner converted from the IP of this
    /// customer's click within [`LOOKBACK_MS`].
    pub ip_converted_before: bool,
    /// Whether the partner signed in to the portal from the IP of this customer's click
    /// within [`LOOKBACK_MS`].
    pub ip_partner_signed_in: bool,
    /// When the customer's click was (`None`: no click, as for a coupon's customer).
    pub click_at: Option<i64>,
    /// When the sale was.
    pub at: i64,
}

/// Whether `rule` holds for `facts`.
pub fn holds(rule: Rule, facts: &SaleFacts<'_>) -> bool {
    match rule {
        Rule::SelfReferral => self_referral::is_self_referral(
            facts.customer_emails.iter().copied(),
            facts.partner_emails.iter().copied(),
        ),
        Rule::DisposableEmail => facts.customer_emails.iter().any(|e| is_disposable(e)),
        Rule::DuplicateIp => facts.ip_converted_before,
        Rule::PartnerIp => facts.ip_partner_signed_in,
        Rule::FastConversion => facts
            .click_at
            .is_some_and(|click| facts.at.saturating_sub(click) < FAST_CONVERSION_MS),
    }
}

/// What the rules decide about a new commission.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The rules that hold, whatever their action.
    pub holding: Vec<Rule>,
    /// The commission's flags: every rule that holds and is not off.
    pub flags: Vec<CommissionFlag>,
    /// The first rule that holds and rejects: the commission is created `rejected` with
    /// it as its reason.
    pub rejected_by: Option<Rule>,
}

impl Verdict {
    /// Nothing holds: the commission comes due after the hold.
    pub fn clear() -> Verdict {
        Verdict::default()
    }

    /// Whether the commission waits for an owner: a rule that flags holds, none rejects.
    pub fn waits_for_owner(&self) -> bool {
        self.rejected_by.is_none() && !self.flags.is_empty()
    }
}

/// The verdict of `rules` on a sale's `facts`.
pub fn verdict(facts: &SaleFacts<'_>, rules: &FraudRules) -> Verdict {
    let holding: Vec<Rule> = Rule::ALL.into_iter().filter(|&r| holds(r, facts)).collect();
    let on = || holding.iter().copied().filter(|&r| rules.is_on(r));
    Verdict {
        flags: on().map(Rule::flag).collect(),
        rejected_by: on().find(|&r| rules.get(r) == Action::Reject),
        holding,
    }
}

/// The verdict of `rules` on a lead commission: only `self_referral` applies to a lead,
/// on the customer's emails (`facts.customer_emails`) and the partner's.
pub fn lead_verdict(facts: &SaleFacts<'_>, rules: &FraudRules) -> Verdict {
    let mut only = FraudRules::all(Action::Off);
    only.set(Rule::SelfReferral, rules.get(Rule::SelfReferral));
    let mut v = verdict(facts, &only);
    v.holding.retain(|&r| r == Rule::SelfReferral);
    v
}

#[cfg(test)]
mod tests;
