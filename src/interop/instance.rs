//! What every part of one instance shares: tokens and roles, the trampolines, ids, the warn-line bound, and borrowing.
//!
//! The guards (inspect.rs, inbox.rs), the settings link and the mount
//! (plugin.rs) take what they share from here; none of them imports the
//! runtime, which is the root of an instance's life (runtime.rs: its start,
//! the routing of every trampoline's call down to them, its recovery timer).
//! Each guard keeps its own state in a cell of its own module; the settings
//! link lives in the mount's state.
//!
//! Every function handed to the host is a trampoline (trampolines.js): a small
//! JavaScript function that enters the current instance with a token naming
//! what it serves, an id and a [`Role`]. The runtime decodes the token and
//! routes the call.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::prelude::*;

use super::fault::{self, Point};
use super::js::{
    log_later, make_insert_observer, make_listener, make_method, make_pre_step, monotonic_now,
};
use crate::throttle::{left_out_notice, suppressed_notice, Admit, LogBound};

/// What a trampoline serves; the low bits of its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// `registry.resolveClientQuery` called without a bound agent.
    Unbound,
    /// `registry.resolveClientQuery` refused an answer (`previous` carries its result).
    Refused,
    /// An inbox's `claim`.
    Claim,
    /// The `agent/pre-step` entry.
    PreStep,
    /// The `agent/created` listener.
    Created,
    /// The `session/event` observer.
    SessionEvent,
    /// `inspectClientGuard.reports()`.
    Reports,
    /// `inspectClientGuard.counts()`.
    InspectCounts,
    /// `inspectClientGuard.reset()`.
    InspectReset,
    /// `inboxInputGuard.violations()`.
    Violations,
    /// `inboxInputGuard.counts()`.
    InboxCounts,
    /// `inboxInputGuard.reset()`.
    InboxReset,
    /// `status()` of either service.
    Status,
    /// The mount's records effect (returns its disposer).
    Records,
    /// The records effect's disposer.
    RecordsDispose,
    /// The inbox half's effect (returns its disposer).
    Inbox,
    /// The inbox half's disposer.
    InboxDispose,
    /// `ctx.inject(['cordisInspect'], …)`: the registry appeared.
    Registry,
    /// The registry attachment's effect (returns its disposer).
    Attach,
    /// The registry attachment's disposer.
    Detach,
    /// The `HarnessGuard` provider's `query(method, input, { agent })`.
    Provider,
    /// `ctx.inject(['commands'], …)`: the command registry appeared.
    Commands,
    /// The `/harness-guard` command's handler.
    Command,
    /// The disposer `installInspectClientGuard` returns.
    Uninstall,
    /// The mount's `internal/update` hook: a live config change, applied in place.
    Update,
    /// The `internal/config` listener: a live config change, checked before cordis validates it.
    ConfigCheck,
    /// `ctx.inject(['settings'], …)`: the settings service appeared (token: the settings link).
    Settings,
    /// A settings link's resolved value changed, or the link went away.
    SettingsChange,
}

const ROLES: [Role; 28] = [
    Role::Unbound,
    Role::Refused,
    Role::Claim,
    Role::PreStep,
    Role::Created,
    Role::SessionEvent,
    Role::Reports,
    Role::InspectCounts,
    Role::InspectReset,
    Role::Violations,
    Role::InboxCounts,
    Role::InboxReset,
    Role::Status,
    Role::Records,
    Role::RecordsDispose,
    Role::Inbox,
    Role::InboxDispose,
    Role::Registry,
    Role::Attach,
    Role::Detach,
    Role::Provider,
    Role::Commands,
    Role::Command,
    Role::Uninstall,
    Role::Update,
    Role::ConfigCheck,
    Role::Settings,
    Role::SettingsChange,
];

/// The bits of a token that carry its role; the rest carry the id.
pub(super) const ROLE_BITS: u32 = 5;

/// The token of `role` of `id`, as a trampoline carries it.
pub(super) fn token(id: u32, role: Role) -> u32 {
    (id << ROLE_BITS) | role as u32
}

impl Role {
    /// The role a token carries, and the id it serves.
    pub(super) fn of(token: u32) -> Option<(Self, u32)> {
        ROLES
            .get((token & ((1 << ROLE_BITS) - 1)) as usize)
            .map(|role| (*role, token >> ROLE_BITS))
    }

    /// The entry point a role is, for fault logs and fault injection.
    pub(super) const fn point(self) -> Point {
        match self {
            Role::Unbound | Role::Refused => Point::Resolve,
            Role::Claim => Point::Claim,
            Role::PreStep => Point::PreStep,
            Role::Created => Point::Created,
            Role::SessionEvent => Point::SessionEvent,
            Role::Records
            | Role::RecordsDispose
            | Role::Inbox
            | Role::InboxDispose
            | Role::Registry
            | Role::Attach
            | Role::Detach
            | Role::Commands
            | Role::Uninstall
            | Role::Update
            | Role::ConfigCheck
            | Role::Settings
            | Role::SettingsChange => Point::Effect,
            Role::Reports
            | Role::InspectCounts
            | Role::InspectReset
            | Role::Violations
            | Role::InboxCounts
            | Role::InboxReset
            | Role::Status
            | Role::Provider
            | Role::Command => Point::Service,
        }
    }
}

/// The services of this instance; reached through [`with`].
pub(super) struct Instance {
    log_bound: RefCell<LogBound>,
    next_id: Cell<u32>,
}

thread_local! {
    static INSTANCE: Instance = const {
        Instance {
            log_bound: RefCell::new(LogBound::new()),
            next_id: Cell::new(1),
        }
    };
}

/// Run `f` with this instance's services.
pub(super) fn with<R>(f: impl FnOnce(&Instance) -> R) -> R {
    INSTANCE.with(f)
}

impl Instance {
    /// A fresh id for a guard, a mount, an attachment or a link: never 0 (no
    /// guard), and small enough to leave room for a role in a token.
    pub(super) fn next_id(&self) -> u32 {
        let id = self.next_id.get();
        self.next_id
            .set(crate::idmap::next_id(id, u32::MAX >> ROLE_BITS));
        id
    }

    /// Whether a warn line about `session` may be written now (see [`LogBound`]),
    /// with the notice that goes with it.
    fn admit_line(&self, session: &str, now: f64) -> Admit {
        exclusive(&self.log_bound, |b| b.admit(session, now))
    }

    /// A JavaScript function served by `role` of `id`. When it may not enter
    /// this instance it forwards to `previous` when that is a function, else
    /// answers with a copy of `fallback` (by its first argument when `by_first`).
    pub(super) fn method(
        &self,
        id: u32,
        role: Role,
        previous: &JsValue,
        fallback: &JsValue,
        by_first: bool,
    ) -> Function {
        make_method(
            token(id, role),
            role.point().name(),
            previous,
            fallback,
            by_first,
        )
    }

    /// A listener served by `role` of `id`: it never throws, and answers nothing.
    pub(super) fn listener(&self, id: u32, role: Role) -> Function {
        make_listener(token(id, role), role.point().name())
    }

    /// The `session/event` observer: only inbox writes that inserted something other
    /// than usable messages reach the guard.
    pub(super) fn insert_observer(&self, guard: u32) -> Function {
        make_insert_observer(token(guard, Role::SessionEvent))
    }

    /// The `agent/pre-step` entry: the guard sees the event, the trampoline calls `next`.
    pub(super) fn pre_step(&self, guard: u32) -> Function {
        make_pre_step(token(guard, Role::PreStep))
    }
}

/// Log `text`, a line about `session` (`""` when none), once the guard returns to
/// JavaScript, within the per-session bound (see [`crate::throttle`]).
pub(super) fn emit(log: &Function, session: &str, text: &str) {
    emit_with(log, session, &|| text.to_owned());
}

/// [`emit`], the line made only when it is written (most of a flood is left out).
pub(super) fn emit_with(log: &Function, session: &str, text: &dyn Fn() -> String) {
    emit_at(log, session, monotonic_now(), text);
}

/// [`emit_with`], with the monotonic clock read already (`now`).
pub(super) fn emit_at(log: &Function, session: &str, now: f64, text: &dyn Fn() -> String) {
    match with(|instance| instance.admit_line(session, now)) {
        Admit::Write { left_out } => {
            if left_out > 0 {
                log_later(log, &left_out_notice(session, left_out));
            }
            log_later(log, &text());
        }
        Admit::Notice => log_later(log, &suppressed_notice(session)),
        Admit::Skip => {}
    }
}

/// `f` on the value in `cell`. No call into JavaScript is made while a cell is
/// borrowed (JavaScript may call straight back in: cordis runs an effect's body
/// inside `ctx.effect`, the host's splice emits a `session/event` the observer
/// takes), so the cell is free whenever JavaScript calls in: a conflict is a
/// broken invariant, and it traps (the guard fails open, reports the fault and
/// recovers on a fresh instance) rather than skip the work (a deadline tick that
/// ended nothing and never re-armed would leave every waiting query waiting for
/// good).
#[inline(always)]
pub(super) fn exclusive<T, R>(cell: &RefCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    match cell.try_borrow_mut() {
        Ok(mut value) => f(&mut value),
        Err(_) => fault::broken(),
    }
}

/// `f` on the value in `cell`, read only (see [`exclusive`]).
#[inline(always)]
pub(super) fn shared<T, R>(cell: &RefCell<T>, f: impl FnOnce(&T) -> R) -> R {
    match cell.try_borrow() {
        Ok(value) => f(&value),
        Err(_) => fault::broken(),
    }
}
