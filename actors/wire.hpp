// wire: how skein's values cross a node's edge — CAF 0.17 `inspect` overloads
// for the model values the cluster protocol carries (events, manifests, agents,
// run inputs and results, thread options).
//
// Each overload lists every field of its struct. A field added to a struct and
// not here would silently not cross nodes, so each struct's size is pinned
// below: when one fails, add the new field to its inspect() and to wire_test's
// filled_* value, then update the size. (The sizes are those of g++ 12 on
// x86-64 with libstdc++, the one platform skein builds on.)
//
// Enums cross as their underlying integers (wire_detail::checked); a value out
// of range is refused on load (a node never trusts another's bytes more than a
// client's).
#pragma once

#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "persistence/event_log.hpp"
#include "runtime/model/agent.hpp"
#include "runtime/model/compaction.hpp"
#include "runtime/model/event.hpp"
#include "runtime/model/manifest.hpp"
#include "runtime/model/run.hpp"

namespace skein {

namespace wire_detail {

// A field holding enums of type E: an E, a std::optional<E> or a std::vector<E>,
// with E's last enumerator. Passed to the inspector as a temporary:
// `f(..., checked(x.status, thread_status::cancelled))`. Each E crosses as its
// underlying integer and is checked against `last` on load (CAF's own enum
// handling casts any integer).
template <class T, class E>
struct checked_field {
  T& value;
  E last;
};

template <class T, class E>
checked_field<T, E> checked(T& value, E last) {
  return {value, last};
}

// One enum.
template <class Inspector, class E>
typename Inspector::result_type inspect(Inspector& f, checked_field<E, E>& x) {
  using U = std::underlying_type_t<E>;
  U u = static_cast<U>(x.value);
  if constexpr (Inspector::writes_state) {
    if (auto e = f(u)) return e;
    if (u > static_cast<U>(x.last)) return caf::make_error(caf::sec::invalid_argument, "enum value out of range");
    x.value = static_cast<E>(u);
    return {};
  } else {
    return f(u);
  }
}

// An optional enum: a flag, then the value (checked as one enum) — the type's
// zero value when there is none: `f(..., checked(x.last_outcome, run_outcome::cancelled))`.
template <class Inspector, class E>
typename Inspector::result_type inspect(Inspector& f, checked_field<std::optional<E>, E>& x) {
  bool has = x.value.has_value();
  E v = x.value.value_or(E{});
  auto c = checked(v, x.last);
  if constexpr (Inspector::writes_state) {
    if (auto e = f(has, c)) return e;
    if (has) x.value = v;
    else x.value.reset();
    return {};
  } else {
    return f(has, c);
  }
}

// A vector of enums, each checked as one enum is.
template <class Inspector, class E>
typename Inspector::result_type inspect(Inspector& f, checked_field<std::vector<E>, E>& x) {
  using U = std::underlying_type_t<E>;
  std::vector<U> us;
  if constexpr (Inspector::writes_state) {
    if (auto e = f(us)) return e;
    std::vector<E> values;
    for (U u : us) {
      if (u > static_cast<U>(x.last)) return caf::make_error(caf::sec::invalid_argument, "enum value out of range");
      values.push_back(static_cast<E>(u));
    }
    x.value = std::move(values);
    return {};
  } else {
    for (E v : x.value) us.push_back(static_cast<U>(v));
    return f(us);
  }
}

}  // namespace wire_detail

using wire_detail::checked;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_usage& x) {
  return f(caf::meta::type_name("skein.token_usage"), x.input_tokens, x.output_tokens, x.cache_read_tokens,
           x.cache_write_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event& x) {
  return f(caf::meta::type_name("skein.event"), x.seq, x.ts_ms, x.run_id, checked(x.type, event_type::signal), checked(x.role, message_role::system), x.text, x.call_id,
           x.name, x.json, x.is_error, x.usage, x.cost_usd, x.duration_ms, x.turns, x.outcome, x.from_seq,
           x.to_seq, x.original_events, x.tokens_before, x.tokens_after, x.prompt_seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, house_member& x) {
  return f(caf::meta::type_name("skein.house_member"), x.agent_id, checked(x.trigger, member_trigger::on_mention));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, work_item& x) {
  return f(caf::meta::type_name("skein.work_item"), x.text, checked(x.status, work_status::archived),
           checked(x.cls, work_class::backlog), x.project_state, x.touch_count, x.created_at_ms, x.last_touched_at_ms,
           x.dormant_since_ms, x.resolved_at_ms, x.resolution, x.resolved_session, x.archived_at_ms, x.project,
           x.linear_issue);
}

namespace wire_detail {

// std::optional<work_item> as a flag, then the item when there is one. Passed
// as a temporary, like checked(): `f(..., optional_work{x.work})`.
struct optional_work {
  std::optional<work_item>& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optional_work& x) {
  bool has = x.value.has_value();
  if constexpr (Inspector::writes_state) {
    if (auto e = f(has)) return e;
    if (!has) {
      x.value.reset();
      return {};
    }
    if (!x.value) x.value.emplace();
    return f(*x.value);
  } else {
    return has ? f(has, *x.value) : f(has);
  }
}

}  // namespace wire_detail

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, manifest& x) {
  return f(caf::meta::type_name("skein.manifest"), x.id, x.agent_id, checked(x.parent, parent_kind::agent), x.parent_id,
           x.session_id, x.task_id, x.title, x.name, x.tags, x.pinned_at_ms, x.environment_id,
           checked(x.status, thread_status::cancelled), checked(x.last_outcome, run_outcome::cancelled), x.usage, x.cost_usd, x.config, x.created_at_ms,
           x.updated_at_ms, x.last_seq, x.children_count, x.heartbeat_at_ms, x.title_generated,
           x.compaction_seq, x.archived_at_ms, x.depth, x.members, wire_detail::optional_work{x.work});
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_input& x) {
  return f(caf::meta::type_name("skein.run_input"), x.text, checked(x.role, message_role::system), x.idempotency_key, x.source, x.run_id,
           x.member, x.follow_up);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_result& x) {
  return f(caf::meta::type_name("skein.run_result"), x.thread_id, x.run_id, checked(x.outcome, run_outcome::cancelled), x.text, x.error, x.usage,
           x.cost_usd, x.duration_ms, x.turns, x.first_seq, x.last_seq);
}

namespace wire_detail {

// std::optional<mid_run_policy> as 0 (none) or 1 + the policy.
struct optional_policy {
  std::optional<mid_run_policy>& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, optional_policy& x) {
  uint8_t code = x.value ? static_cast<uint8_t>(*x.value) + 1 : 0;
  if constexpr (Inspector::writes_state) {
    if (auto e = f(code)) return e;
    if (code > static_cast<uint8_t>(mid_run_policy::interrupt) + 1)
      return caf::make_error(caf::sec::invalid_argument, "policy out of range");
    if (code == 0) x.value.reset();
    else x.value = static_cast<mid_run_policy>(code - 1);
    return {};
  } else {
    return f(code);
  }
}

// A size_t crossing as 64 bits.
struct size64 {
  size_t& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, size64& x) {
  uint64_t v = x.value;
  if constexpr (Inspector::writes_state) {
    if (auto e = f(v)) return e;
    x.value = static_cast<size_t>(v);
    return {};
  } else {
    return f(v);
  }
}

}  // namespace wire_detail

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, thread_options& x) {
  return f(caf::meta::type_name("skein.thread_options"), x.agent_id, x.title, x.name, x.tags, x.parent_thread_id,
           x.task_id, wire_detail::optional_policy{x.policy}, x.dm, x.members, x.engine_config);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_budgets& x) {
  return f(caf::meta::type_name("skein.run_budgets"), x.ticks_max, x.run_time_ms_max, x.engine_idle_ms,
           x.tool_timeout_ms, x.output_bytes_max, x.tool_calls_max, x.tokens_per_day_max, x.cost_usd_per_day_max);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, effect_settings& x) {
  return f(caf::meta::type_name("skein.effect_settings"), x.titles, x.embedder, x.embedder_config);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, schedule& x) {
  return f(caf::meta::type_name("skein.schedule"), x.id, x.agent_id, checked(x.kind, schedule_kind::once), x.cron,
           x.time_zone, x.interval_ms, x.anchor_ms, x.at_ms, x.input_text, checked(x.input_role, message_role::system),
           x.thread_id, x.title_prefix, x.tags, checked(x.missed, missed_policy::run_once), x.paused,
           x.created_at_ms, x.next_fire_at_ms, x.last_fire_at_ms, x.fire_count, x.history_seq);
}
static_assert(sizeof(schedule) == 336,
              "schedule changed: update actors/wire.hpp");

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, schedule_firing& x) {
  return f(caf::meta::type_name("skein.schedule_firing"), x.schedule_id, x.seq, x.scheduled_at_ms, x.fired_at_ms,
           x.thread_id, x.run_id, checked(x.outcome, firing_outcome::failed), x.reason, x.missed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compact_result& x) {
  return f(caf::meta::type_name("skein.compact_result"), x.compacted, x.failed, x.reason, x.seq, x.tokens_before,
           x.tokens_after, x.events_before, x.events_after);
}
static_assert(sizeof(compact_result) == sizeof(uint64_t) + sizeof(std::string) + 5 * sizeof(uint64_t),
              "compact_result changed: update actors/wire.hpp");

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compaction_settings& x) {
  return f(caf::meta::type_name("skein.compaction_settings"), x.auto_tokens, x.stages, x.keep_turns,
           x.tool_result_bytes_max);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retention_policy& x) {
  return f(caf::meta::type_name("skein.retention_policy"), x.archive_after_days, x.delete_after_days);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delegation_settings& x) {
  return f(caf::meta::type_name("skein.delegation_settings"), x.agents, x.depth_max, x.self_allowed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_config& x) {
  return f(caf::meta::type_name("skein.agent_config"), x.id, x.system_prompt, x.engine, x.engine_config, x.tools,
           checked(x.policy, mid_run_policy::interrupt), x.budgets, x.effects, x.compaction, x.retention, x.delegation, x.created_at_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, raw_event& x) {
  return f(caf::meta::type_name("skein.raw_event"), x.seq, checked(x.type, event_type::signal), x.json);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unreadable_record& x) {
  return f(caf::meta::type_name("skein.unreadable_record"), x.thread_id, x.key, x.reason, x.seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, thread_query& x) {
  return f(caf::meta::type_name("skein.thread_query"), checked(x.index, thread_query::by::updated), x.value,
           x.cursor, wire_detail::size64{x.limit}, checked(x.archived_filter, thread_query::archived::only));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, thread_page& x) {
  return f(caf::meta::type_name("skein.thread_page"), x.threads, x.next_cursor, x.unreadable);
}

// A failure here means a struct changed: see the top of this file.
static_assert(sizeof(token_usage) == 32, "token_usage changed: update wire.hpp");
static_assert(sizeof(event) == 328, "event changed: update wire.hpp");
static_assert(sizeof(house_member) == 40, "house_member changed: update wire.hpp");
static_assert(sizeof(work_item) == 216, "work_item changed: update wire.hpp");
static_assert(sizeof(manifest) == 696, "manifest changed: update wire.hpp");
static_assert(sizeof(run_input) == 176, "run_input changed: update wire.hpp");
static_assert(sizeof(run_result) == 208, "run_result changed: update wire.hpp");
static_assert(sizeof(thread_options) == 248, "thread_options changed: update wire.hpp");
static_assert(sizeof(run_budgets) == 64, "run_budgets changed: update wire.hpp");
static_assert(sizeof(effect_settings) == 72, "effect_settings changed: update wire.hpp");
static_assert(sizeof(compaction_settings) == 48, "compaction_settings changed: update wire.hpp");
static_assert(sizeof(retention_policy) == 8, "retention_policy changed: update wire.hpp");
static_assert(sizeof(delegation_settings) == 32, "delegation_settings changed: update wire.hpp");
static_assert(sizeof(agent_config) == 392, "agent_config changed: update wire.hpp");
static_assert(sizeof(raw_event) == 48, "raw_event changed: update wire.hpp");
static_assert(sizeof(unreadable_record) == 104, "unreadable_record changed: update wire.hpp");
static_assert(sizeof(thread_query) == 88, "thread_query changed: update wire.hpp");
static_assert(sizeof(thread_page) == 80, "thread_page changed: update wire.hpp");
}  // namespace skein
