/* SPDX-License-Identifier: Apache-2.0 */
#include "common/net/frame.h"
#include "common/core/error.h"
#include "common/core/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A partial-frame buffer starts small and doubles, so a peer that announces
 * a huge frame and then trickles bytes costs memory in proportion to what it
 * actually sent. */
#define DP_FRAME_BODY_MIN_CAP   4096u

void dp_frame_decoder_init(dp_frame_decoder *d, uint32_t max_len)
{
	DP_REQUIRE(d != NULL);
	memset(d, 0, sizeof(*d));
	if (max_len == 0)
		max_len = DP_FRAME_MAX_DEFAULT;
	if (max_len > DP_FRAME_MAX_LIMIT)
		max_len = DP_FRAME_MAX_LIMIT;
	d->max_len = max_len;
}

void dp_frame_decoder_free(dp_frame_decoder *d)
{
	DP_REQUIRE(d != NULL);
	free(d->body);
	d->body = NULL;
	d->body_cap = 0;
	d->body_have = 0;
	d->hdr_have = 0;
}

/* protobuf-c accepts an over-long varint encoding of field number 0 and
 * keeps it as an unknown field, although 0 is not a valid field number and
 * its own parser refuses the short form.  Refuse it everywhere. */
static int has_field_zero(const ProtobufCMessage *m)
{
	for (unsigned i = 0; m != NULL && i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0)
			return 1;
	return 0;
}

static const ProtobufCMessage *submessage(const Dpasync__Envelope *m)
{
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO: return &m->hello->base;
	case DPASYNC__ENVELOPE__MSG_WELCOME: return &m->welcome->base;
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST: return &m->update_request->base;
	case DPASYNC__ENVELOPE__MSG_QUERY: return &m->query->base;
	case DPASYNC__ENVELOPE__MSG_ANSWER: return &m->answer->base;
	case DPASYNC__ENVELOPE__MSG_REFUSE: return &m->refuse->base;
	case DPASYNC__ENVELOPE__MSG_DONE: return &m->done->base;
	case DPASYNC__ENVELOPE__MSG_PEER_MODEL: return &m->peer_model->base;
	case DPASYNC__ENVELOPE__MSG_PEER_RELEASE: return &m->peer_release->base;
	case DPASYNC__ENVELOPE__MSG_GOODBYE: return &m->goodbye->base;
	default: return NULL;
	}
}

int dp_frame_unpack(const uint8_t *body, size_t len, Dpasync__Envelope **msg)
{
	Dpasync__Envelope *m;

	DP_REQUIRE((body != NULL || len == 0) && msg != NULL);
	m = dpasync__envelope__unpack(NULL, len, body);
	if (m == NULL)
		return dp_error_set(DP_EPROTO, "frame of %zu bytes is not a valid Envelope", len);
	if (has_field_zero(&m->base) || has_field_zero(submessage(m))) {
		dpasync__envelope__free_unpacked(m, NULL);
		return dp_error_set(DP_EPROTO, "frame of %zu bytes has a field number 0", len);
	}
	*msg = m;
	return 0;
}

void dp_frame_msg_free(Dpasync__Envelope *m)
{
	if (m != NULL)
		dpasync__envelope__free_unpacked(m, NULL);
}

static void next_frame(dp_frame_decoder *d)
{
	d->hdr_have = 0;
	d->body_have = 0;
	d->body_len = 0;
	/* Released, not kept: frames split across reads are rare (messages
	 * are small), and a server holding thousands of idle connections
	 * should not keep a buffer for each (docs/scale.md §2). */
	if (d->body != NULL) {
		free(d->body);
		d->body = NULL;
		d->body_cap = 0;
	}
}

/* Room for `need` bytes of the body: doubling, but never beyond the
 * frame's own length. */
static int reserve_body(dp_frame_decoder *d, size_t need)
{
	if (dp_mem_reserve_max(&d->body, &d->body_cap, need, 1, DP_FRAME_BODY_MIN_CAP,
			       d->body_len) != 0)
		return dp_error_set(DP_ENOMEM, "frame decoder: cannot grow buffer to %zu bytes",
				    need);
	return 0;
}

int dp_frame_decode(dp_frame_decoder *d, const uint8_t *buf, size_t len,
		    size_t *used, Dpasync__Envelope **msg)
{
	size_t off = 0, take, need;
	Dpasync__Envelope *m = NULL;
	int r;

	DP_REQUIRE(d != NULL && (buf != NULL || len == 0) && used != NULL && msg != NULL);
	if (d->failed)
		return dp_error_set(DP_EPROTO, "frame decoder already failed on this stream");
	while (d->hdr_have < DP_FRAME_HDR && off < len)
		d->hdr[d->hdr_have++] = buf[off++];
	if (d->hdr_have < DP_FRAME_HDR) {
		*used = off;
		*msg = NULL;
		return 0;
	}
	if (d->body_have == 0) {
		uint32_t n = (uint32_t)d->hdr[0] << 24 | (uint32_t)d->hdr[1] << 16 |
			     (uint32_t)d->hdr[2] << 8 | (uint32_t)d->hdr[3];
		if (n == 0) {
			d->failed = 1;
			return dp_error_set(DP_EPROTO, "frame length 0");
		}
		if (n > d->max_len) {
			d->failed = 1;
			return dp_error_set(DP_EPROTO, "frame length %u exceeds the maximum %u",
					    n, d->max_len);
		}
		d->body_len = n;
		/* Whole body already in the caller's buffer: unpack in place. */
		if (len - off >= n) {
			r = dp_frame_unpack(buf + off, n, &m);
			if (r < 0) {
				d->failed = 1;
				return r;
			}
			next_frame(d);
			*used = off + n;
			*msg = m;
			return 0;
		}
	}
	need = d->body_len - d->body_have;
	take = len - off < need ? len - off : need;
	if (take > 0) {
		r = reserve_body(d, d->body_have + take);
		if (r < 0) {
			d->failed = 1;
			return r;
		}
		memcpy(d->body + d->body_have, buf + off, take);
		d->body_have += take;
		off += take;
	}
	if (d->body_have == d->body_len) {
		r = dp_frame_unpack(d->body, d->body_len, &m);
		if (r < 0) {
			d->failed = 1;
			return r;
		}
		next_frame(d);
	}
	*used = off;
	*msg = m;
	return 0;
}

int dp_frame_encode(const Dpasync__Envelope *m, uint32_t max_len,
		    uint8_t **out, size_t *out_len)
{
	size_t n, packed;
	uint8_t *b;

	DP_REQUIRE(m != NULL && out != NULL && out_len != NULL);
	if (max_len == 0)
		max_len = DP_FRAME_MAX_DEFAULT;
	n = dpasync__envelope__get_packed_size(m);
	if (n == 0)
		return dp_error_set(DP_ERANGE, "frame: empty Envelope (version not set)");
	if (n > max_len)
		return dp_error_set(DP_ERANGE, "frame: %s message of %zu bytes exceeds the maximum %u",
				    dp_frame_kind(m), n, max_len);
	b = malloc(DP_FRAME_HDR + n);
	if (b == NULL)
		return dp_error_set(DP_ENOMEM, "frame: cannot allocate %zu bytes", n + DP_FRAME_HDR);
	b[0] = (uint8_t)(n >> 24);
	b[1] = (uint8_t)(n >> 16);
	b[2] = (uint8_t)(n >> 8);
	b[3] = (uint8_t)n;
	packed = dpasync__envelope__pack(m, b + DP_FRAME_HDR);
	if (packed != n) {
		free(b);
		return dp_error_set(DP_ERANGE, "frame: packed %zu bytes, expected %zu", packed, n);
	}
	*out = b;
	*out_len = DP_FRAME_HDR + n;
	return 0;
}

const char *dp_frame_kind(const Dpasync__Envelope *m)
{
	if (m == NULL)
		return "none";
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO: return "hello";
	case DPASYNC__ENVELOPE__MSG_WELCOME: return "welcome";
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST: return "update_request";
	case DPASYNC__ENVELOPE__MSG_QUERY: return "query";
	case DPASYNC__ENVELOPE__MSG_ANSWER: return "answer";
	case DPASYNC__ENVELOPE__MSG_REFUSE: return "refuse";
	case DPASYNC__ENVELOPE__MSG_DONE: return "done";
	case DPASYNC__ENVELOPE__MSG_PEER_MODEL: return "peer_model";
	case DPASYNC__ENVELOPE__MSG_PEER_RELEASE: return "peer_release";
	case DPASYNC__ENVELOPE__MSG_GOODBYE: return "goodbye";
	default: return "none";
	}
}

/* ---- validation ----------------------------------------------------------- */

struct vlimits {
	size_t p, max_p, max_str;
};

static int check_str(const char *msg, const char *field, const char *s, int nonempty,
		     const struct vlimits *l)
{
	size_t n;

	if (s == NULL)
		s = "";
	n = strnlen(s, l->max_str + 1);
	if (n > l->max_str)
		return dp_error_set(DP_EPROTO, "%s.%s longer than %zu bytes", msg, field, l->max_str);
	if (nonempty && n == 0)
		return dp_error_set(DP_EPROTO, "%s.%s is empty", msg, field);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c > 0x7e)
			return dp_error_set(DP_EPROTO, "%s.%s has a non-printable byte 0x%02x at %zu",
					    msg, field, c, i);
	}
	return 0;
}

static int check_dim(const char *msg, const char *field, size_t n, const struct vlimits *l)
{
	if (l->p != 0 && n != l->p)
		return dp_error_set(DP_EPROTO, "%s.%s has dimension %zu, expected %zu",
				    msg, field, n, l->p);
	if (n == 0 || n > l->max_p)
		return dp_error_set(DP_EPROTO, "%s.%s has dimension %zu, expected 1..%zu",
				    msg, field, n, l->max_p);
	return 0;
}

static int check_vec(const char *msg, const char *field, const double *v, size_t n,
		     const struct vlimits *l)
{
	int r = check_dim(msg, field, n, l);

	if (r < 0)
		return r;
	if (v == NULL)
		return dp_error_set(DP_EPROTO, "%s.%s missing", msg, field);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return dp_error_set(DP_EPROTO, "%s.%s[%zu] is not finite", msg, field, i);
	return 0;
}

/* lo_kind: 0 = any finite, 1 = >= 0, 2 = > 0.  allow_inf admits +inf only. */
static int check_num(const char *msg, const char *field, double v, int lo_kind, int allow_inf)
{
	if (isnan(v))
		return dp_error_set(DP_EPROTO, "%s.%s is NaN", msg, field);
	if (isinf(v) && !(allow_inf && v > 0))
		return dp_error_set(DP_EPROTO, "%s.%s is not finite", msg, field);
	if (lo_kind == 1 && v < 0)
		return dp_error_set(DP_EPROTO, "%s.%s = %g is negative", msg, field, v);
	if (lo_kind == 2 && !(v > 0))
		return dp_error_set(DP_EPROTO, "%s.%s = %g must be positive", msg, field, v);
	return 0;
}

/* A delta of an (epsilon, delta) guarantee: in [0, 1), 0 for pure
 * epsilon-DP (docs/protocol.md §5 "Mechanisms"). */
static int check_delta(const char *msg, const char *field, double v)
{
	int r = check_num(msg, field, v, 1, 0);

	if (r == 0 && !(v < 1))
		r = dp_error_set(DP_EPROTO, "%s.%s = %g is not below 1", msg, field, v);
	return r;
}

/* The schema summary (docs/protocol.md §5 "Schema summary"): one entry per
 * column of x, printable names, finite numbers, a positive scale. */
static int check_summary(const Dpasync__SchemaSummary *s, size_t p, const struct vlimits *l)
{
	int r = check_str("hello", "schema_summary.target", s->target, 0, l);

	if (r == 0 && s->n_features != p)
		r = dp_error_set(DP_EPROTO, "hello.schema_summary has %zu features, n_features %zu",
				 s->n_features, p);
	for (size_t j = 0; r == 0 && j < s->n_features; j++) {
		const Dpasync__FeatureSummary *f = s->features[j];

		r = check_str("hello", "schema_summary.name", f->name, 0, l);
		if (r == 0)
			r = check_str("hello", "schema_summary.kind", f->kind, 0, l);
		if (r == 0)
			r = check_str("hello", "schema_summary.digest", f->digest, 0, l);
		if (r == 0)
			r = check_num("hello", "schema_summary.center", f->center, 0, 0);
		if (r == 0)
			r = check_num("hello", "schema_summary.scale", f->scale, 2, 0);
		if (r == 0)
			r = check_num("hello", "schema_summary.clamp_lo", f->clamp_lo, 0, 0);
		if (r == 0)
			r = check_num("hello", "schema_summary.clamp_hi", f->clamp_hi, 0, 0);
	}
	return r;
}

static int check_hello(const Dpasync__Hello *h, const struct vlimits *l)
{
	int r;

	if (h->version != DP_PROTO_VERSION)
		return dp_error_set(DP_EPROTO, "hello.version %u unsupported (expected %u)",
				    h->version, DP_PROTO_VERSION);
	r = check_str("hello", "owner_id", h->owner_id, 1, l);
	if (r < 0)
		return r;
	if (h->n_rows == 0)
		return dp_error_set(DP_EPROTO, "hello.n_rows is 0");
	r = check_dim("hello", "n_features", h->n_features, l);
	if (r == 0)
		r = check_num("hello", "epsilon", h->epsilon, 2, 1);
	if (r < 0)
		return r;
	/* The learner plans each owner's share of the iterations from the
	 * rates; 0 means "not said" (an owner from before the field) and
	 * counts as 1. */
	r = check_num("hello", "rate", h->rate, 1, 0);
	if (r == 0)
		r = check_str("hello", "schema", h->schema, 0, l);
	if (r == 0)
		r = check_str("hello", "job", h->job, 0, l);
	/* What is left and the owner's bound (docs/protocol.md §5): 0 left is
	 * a real value (nothing left), so the message's absence, never a 0,
	 * marks an owner that predates it. */
	if (r == 0 && h->limits != NULL)
		r = check_num("hello", "limits.epsilon_left", h->limits->epsilon_left, 1, 1);
	if (r == 0 && h->limits != NULL)
		r = check_num("hello", "limits.lifetime_left", h->limits->lifetime_left, 1, 1);
	if (r == 0 && h->limits != NULL)
		r = check_num("hello", "limits.theta_max", h->limits->theta_max, 2, 1);
	if (r == 0 && h->limits != NULL)
		r = check_num("hello", "limits.rho_left", h->limits->rho_left, 1, 1);
	if (r == 0)
		r = check_delta("hello", "delta", h->delta);
	if (r == 0)
		r = check_delta("hello", "lifetime_delta", h->lifetime_delta);
	if (r == 0 && h->schema_summary != NULL)
		r = check_summary(h->schema_summary, h->n_features, l);
	return r;
}

static int check_welcome(const Dpasync__Welcome *w, const struct vlimits *l)
{
	int r;

	r = check_str("welcome", "job", w->job, 1, l);
	if (r == 0)
		r = check_str("welcome", "model", w->model, 1, l);
	if (r < 0)
		return r;
	if (w->t == 0)
		return dp_error_set(DP_EPROTO, "welcome.T is 0");
	if (w->n == 0)
		return dp_error_set(DP_EPROTO, "welcome.N is 0");
	if (w->n_total == 0)
		return dp_error_set(DP_EPROTO, "welcome.n_total is 0");
	if (w->k_done > w->t)
		return dp_error_set(DP_EPROTO, "welcome.k_done %llu exceeds T %llu",
				    (unsigned long long)w->k_done, (unsigned long long)w->t);
	r = check_dim("welcome", "p", w->p, l);
	if (r == 0)
		r = check_num("welcome", "rho", w->rho, 2, 0);
	if (r == 0)
		r = check_num("welcome", "lambda", w->lambda, 1, 0);
	if (r == 0)
		r = check_num("welcome", "theta_max", w->theta_max, 2, 0);
	if (r == 0)
		r = check_num("welcome", "clip_l1", w->clip_l1, 2, 0);
	if (r < 0)
		return r;
	if (w->mode != DPASYNC__MODE__MODE_UNSPECIFIED && w->mode != DPASYNC__MODE__MODE_REQUEST &&
	    w->mode != DPASYNC__MODE__MODE_BROADCAST)
		return dp_error_set(DP_EPROTO, "welcome.mode %d unknown", (int)w->mode);
	/* The mechanism and its clip (docs/protocol.md §5 "Mechanisms"). */
	if (w->mechanism == DPASYNC__MECHANISM__MECHANISM_GAUSSIAN)
		return check_num("welcome", "clip_l2", w->clip_l2, 2, 0);
	if (w->mechanism != DPASYNC__MECHANISM__MECHANISM_LAPLACE)
		return dp_error_set(DP_EPROTO, "welcome.mechanism %d unknown", (int)w->mechanism);
	if (w->clip_l2 != 0)
		return dp_error_set(DP_EPROTO, "welcome.clip_l2 = %g with the Laplace mechanism",
				    w->clip_l2);
	return 0;
}

static int check_answer(const Dpasync__Answer *a, const struct vlimits *l)
{
	int r;

	if (a->k == 0)
		return dp_error_set(DP_EPROTO, "answer.k is 0");
	r = check_vec("answer", "gradient", a->gradient, a->n_gradient, l);
	if (r == 0)
		r = check_num("answer", "epsilon_spent", a->epsilon_spent, 1, 1);
	if (r < 0)
		return r;
	return check_num("answer", "epsilon_left", a->epsilon_left, 1, 1);
}

int dp_frame_validate(const Dpasync__Envelope *m, const dp_frame_limits *lim)
{
	struct vlimits l = { 0, DP_FRAME_MAX_P, DP_FRAME_MAX_STR };

	if (lim != NULL) {
		l.p = lim->p;
		if (lim->max_p != 0)
			l.max_p = lim->max_p;
		if (lim->max_str != 0)
			l.max_str = lim->max_str;
	}
	if (m == NULL)
		return dp_error_set(DP_EPROTO, "no message");
	if (m->version != DP_PROTO_VERSION)
		return dp_error_set(DP_EPROTO, "envelope version %u unsupported (expected %u)",
				    m->version, DP_PROTO_VERSION);
	switch (m->msg_case) {
	case DPASYNC__ENVELOPE__MSG_HELLO:
		if (m->hello == NULL)
			break;
		return check_hello(m->hello, &l);
	case DPASYNC__ENVELOPE__MSG_WELCOME:
		if (m->welcome == NULL)
			break;
		return check_welcome(m->welcome, &l);
	case DPASYNC__ENVELOPE__MSG_UPDATE_REQUEST:
		if (m->update_request == NULL)
			break;
		return 0;
	case DPASYNC__ENVELOPE__MSG_QUERY:
		if (m->query == NULL)
			break;
		if (m->query->k == 0)
			return dp_error_set(DP_EPROTO, "query.k is 0");
		return check_vec("query", "theta", m->query->theta, m->query->n_theta, &l);
	case DPASYNC__ENVELOPE__MSG_ANSWER:
		if (m->answer == NULL)
			break;
		return check_answer(m->answer, &l);
	case DPASYNC__ENVELOPE__MSG_REFUSE:
		if (m->refuse == NULL)
			break;
		return check_str("refuse", "reason", m->refuse->reason, 0, &l);
	case DPASYNC__ENVELOPE__MSG_DONE:
		if (m->done == NULL)
			break;
		if (m->done->t == 0)
			return dp_error_set(DP_EPROTO, "done.T is 0");
		return check_vec("done", "final_theta", m->done->final_theta,
				 m->done->n_final_theta, &l);
	case DPASYNC__ENVELOPE__MSG_PEER_MODEL:
		if (m->peer_model == NULL)
			break;
		if (check_str("peer_model", "agent_id", m->peer_model->agent_id, 1, &l) < 0)
			return DP_EPROTO;
		return check_vec("peer_model", "theta", m->peer_model->theta,
				 m->peer_model->n_theta, &l);
	case DPASYNC__ENVELOPE__MSG_PEER_RELEASE:
		if (m->peer_release == NULL)
			break;
		if (check_str("peer_release", "origin", m->peer_release->origin, 0, &l) < 0)
			return DP_EPROTO;
		/* flags only: no value; a release: a vector of p and rows > 0 */
		if (m->peer_release->origin == NULL || m->peer_release->origin[0] == '\0') {
			if (m->peer_release->n_value != 0)
				return dp_error_set(DP_EPROTO, "peer_release without origin carries "
						    "a value");
			return 0;
		}
		if (m->peer_release->rows == 0)
			return dp_error_set(DP_EPROTO, "peer_release.rows is 0");
		if (m->peer_release->kind != 1 && m->peer_release->kind != 2)
			return dp_error_set(DP_EPROTO, "peer_release.kind %u is not 1 (gradient) or 2 "
					    "(model)", m->peer_release->kind);
		return check_vec("peer_release", "value", m->peer_release->value,
				 m->peer_release->n_value, &l);
	case DPASYNC__ENVELOPE__MSG_GOODBYE:
		if (m->goodbye == NULL)
			break;
		return check_str("goodbye", "text", m->goodbye->text, 0, &l);
	default:
		return dp_error_set(DP_EPROTO, "envelope carries no message");
	}
	return dp_error_set(DP_EPROTO, "envelope %s message missing", dp_frame_kind(m));
}

void dp_frame_goodbye(Dpasync__Envelope *env, Dpasync__Goodbye *g, int code, const char *text,
		      char buf[DP_FRAME_MAX_STR + 1])
{
	DP_REQUIRE(env != NULL && g != NULL && text != NULL && buf != NULL);
	snprintf(buf, DP_FRAME_MAX_STR + 1, "%s", text);
	for (char *q = buf; *q; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
			*q = ' ';
	dpasync__goodbye__init(g);
	g->code = (Dpasync__GoodbyeCode)code;
	g->text = buf;
	dpasync__envelope__init(env);
	env->version = DP_PROTO_VERSION;
	env->msg_case = DPASYNC__ENVELOPE__MSG_GOODBYE;
	env->goodbye = g;
}
