//! Partner groups: created, listed, changed and deleted by a program's owners, and
//! partners moved between them. A group's rewards decide what its partners' sales and
//! leads earn ([`reftrack_domain::rewards`]), from the moment they change.

use super::*;
use crate::Listed;
use reftrack_domain::audit::Origin;
use reftrack_domain::rewards::{Rewards, RewardsSpec};
use reftrack_store::{Group, GroupPatch, NewGroup};

/// Longest group name.
pub const MAX_GROUP_NAME: usize = 100;

/// The body of the call that creates a partner group.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupBody {
    /// 1 to 100 characters, unique in the program whatever its case.
    #[schema(example = "Influencers")]
    pub name: String,
    /// What its partners earn; absent: a copy of the default group's rewards.
    #[schema(value_type = Option<RewardsSpec>)]
    pub rewards: Option<serde_json::Value>,
    /// Days its partners' commissions are held before approval; absent or null: the
    /// program's.
    pub commission_hold_days: Option<i64>,
}

/// The body of the call that changes a partner group: the fields it names.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupPatchBody {
    pub name: Option<String>,
    /// The group's new rewards, whole; they apply to events recorded from now on.
    #[schema(value_type = Option<RewardsSpec>)]
    pub rewards: Option<serde_json::Value>,
    /// Null: the program's hold.
    #[serde(default, deserialize_with = "nullable")]
    pub commission_hold_days: Option<Option<i64>>,
}

/// The body's rewards, validated, or the error naming the wrong field.
pub fn rewards_of(value: &serde_json::Value) -> Result<Rewards> {
    Rewards::from_json(value, "rewards").map_err(|e| Error::invalid(e.to_string()))
}

impl GroupBody {
    /// Every field the body gets wrong, in the form's order.
    pub fn problems(&self) -> Vec<String> {
        refusals([
            Some(name("name", &self.name, MAX_GROUP_NAME).map(drop)),
            self.rewards.as_ref().map(|r| rewards_of(r).map(drop)),
            self.commission_hold_days.map(|d| hold_days(d).map(drop)),
        ])
    }
}

/// The audit entry of a group created or deleted: what it held.
fn group_entry(at: i64, origin: &Origin, action: Action, g: &Group) -> Vec<Entry> {
    vec![Entry::new(
        at,
        origin,
        action,
        Scope::Program(g.program_id),
        Target::group(g.id),
    )
    .with_details(serde_json::json!({
        "name": g.name,
        "rewards": g.rewards,
        "commission_hold_days": g.commission_hold_days,
    }))]
}

impl App {
    /// Creates a partner group in a program.
    pub async fn create_group(
        &self,
        caller: &Caller,
        program_id: i64,
        b: GroupBody,
    ) -> Result<Group> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        let new = NewGroup {
            program_id,
            name: name("name", &b.name, MAX_GROUP_NAME)?,
            rewards: b.rewards.as_ref().map(rewards_of).transpose()?,
            commission_hold_days: b.commission_hold_days.map(hold_days).transpose()?,
        };
        self.program(program_id).await?;
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&Group>, g: &Group| group_entry(at, origin, Action::GroupCreated, g);
        let group = self.store.create_group(&new, at, &audit).await?;
        self.changed();
        Ok(group)
    }

    /// A program's groups, the default first, as one page (a program has few).
    pub async fn list_groups(&self, caller: &Caller, program_id: i64) -> Result<Listed<Group>> {
        self.readable_program(caller, program_id).await?;
        Ok(Listed {
            data: self.store.groups(program_id).await?,
            next_cursor: None,
        })
    }

    /// One group the caller may read.
    pub async fn group(&self, caller: &Caller, id: i64) -> Result<Group> {
        self.allow(caller, Record::Group(id), Access::Read).await?;
        Ok(self.store.group(id).await?)
    }

    /// Changes a group's name, rewards or hold. A change of the default group's sale
    /// reward is the program's `commission` too.
    pub async fn update_group(&self, caller: &Caller, id: i64, b: GroupPatchBody) -> Result<Group> {
        self.allow(caller, Record::Group(id), Access::Change)
            .await?;
        let patch = GroupPatch {
            name: b
                .name
                .as_deref()
                .map(|n| name("name", n, MAX_GROUP_NAME))
                .transpose()?,
            rewards: b.rewards.as_ref().map(rewards_of).transpose()?,
            commission_hold_days: b
                .commission_hold_days
                .map(|d| d.map(hold_days).transpose())
                .transpose()?,
        };
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |old: Option<&Group>, new: &Group| {
            let mut changes = Changes::new();
            if let Some(old) = old {
                changes
                    .field("name", &old.name, &new.name)
                    .field("rewards", &old.rewards, &new.rewards)
                    .field(
                        "commission_hold_days",
                        &old.commission_hold_days,
                        &new.commission_hold_days,
                    );
            }
            if changes.is_empty() {
                return Vec::new();
            }
            vec![Entry::new(
                at,
                origin,
                Action::GroupUpdated,
                Scope::Program(new.program_id),
                Target::group(new.id),
            )
            .with_details(changes.into_value())]
        };
        let group = self.store.update_group(id, &patch, at, &audit).await?;
        self.changed();
        Ok(group)
    }

    /// Deletes a group that is not the default and has no partners (409 otherwise).
    pub async fn delete_group(&self, caller: &Caller, id: i64) -> Result<Group> {
        self.allow(caller, Record::Group(id), Access::Change)
            .await?;
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&Group>, g: &Group| group_entry(at, origin, Action::GroupDeleted, g);
        let group = self.store.delete_group(id, &audit).await?;
        self.changed();
        Ok(group)
    }
}
