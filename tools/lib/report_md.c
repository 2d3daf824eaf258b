/* SPDX-License-Identifier: Apache-2.0 */
/* report.md from the numbers of a report (report_md.h). */
#include "tools/lib/report_md.h"

#include <math.h>

/* Milliseconds with 4 significant digits, "—" for none. */
static void put_ms(FILE *f, double s)
{
	if (isnan(s))
		fputs("—", f);
	else
		fprintf(f, "%.4g", s * 1e3);
}

/* "median / p95" in milliseconds. */
static void put_ms2(FILE *f, double median, double p95, const char *sep)
{
	put_ms(f, median);
	fputs(sep, f);
	put_ms(f, p95);
}

static void figs_md(FILE *f, const dp_report_fig *figs, size_t n)
{
	fputs("\n## Figures\n", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\n### %s\n\n%s\n\n![%s](%s)\n", figs[i].heading, figs[i].text,
			figs[i].heading, figs[i].file);
}

/* The first line under the title: what the run was. */
static void learner_context(FILE *m, const dp_report_learner *r)
{
	fprintf(m, "# Run report: %s\n\nlearnerd run", r->dir);
	if (r->job != NULL)
		fprintf(m, " · job %s", r->job);
	if (r->model != NULL)
		fprintf(m, " · model %s%s", r->model, r->partial ? " (**partial**)" : "");
	if (r->mode != NULL)
		fprintf(m, " · mode %s · max-inflight %g", r->mode, r->max_inflight);
	fprintf(m, " · N = %zu owners", r->N);
	if (r->T)
		fprintf(m, " · T = %zu", r->T);
	if (r->have_eta)
		fprintf(m, " · η = %.6g", r->eta);
	fputs("\n", m);
	/* A partial model (docs/design.md §9 "Partial model") is said before
	 * any number, since ψ and every figure are of a job that stopped. */
	if (r->partial)
		fprintf(m, "\n**Partial model**: the job stopped at k = %llu of T = %zu (%s)%s%s; "
			"model.json holds the last θ, marked `\"partial\": true`.\n",
			(unsigned long long)r->partial_k, r->T, r->partial_reason,
			r->partial_detail ? ": " : "", r->partial_detail ? r->partial_detail : "");
}

static void learner_key_numbers(FILE *m, const dp_report_learner *r)
{
	fputs("\n## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| iterations | %zu", r->iterations);
	if (r->T)
		fprintf(m, " of T = %zu", r->T);
	fprintf(m, " |\n| duration | %.3f s (from the first query to the last update) |\n",
		r->duration_s);
	fprintf(m, "| iterations/s | %.4g |\n", r->rate);
	fprintf(m, "| gaps | %zu (over %.3g s between two updates, %g × the median %.3g ms)",
		r->ngaps, r->gap_threshold, DP_REPORT_GAP_FACTOR, r->gap_median * 1e3);
	if (r->ngaps) {
		fprintf(m, ": %.3f s in all; %.4g iterations/s without them", r->gap_total,
			r->rate_without_gaps);
		for (size_t i = 0; i < r->ngaps; i++)
			fprintf(m, "; after k = %zu: %.3f s", r->gaps[i].after_k, r->gaps[i].seconds);
	}
	fputs(" |\n| query round trip, median / p95 | ", m);
	put_ms2(m, r->rtt_median, r->rtt_p95, " / ");
	fputs(" ms |\n| request wait, median / p95 | ", m);
	put_ms2(m, r->wait_median, r->wait_p95, " / ");
	fputs(" ms |\n", m);
	if (r->have_staleness)
		fprintf(m, "| staleness, median / max | %g / %g (updates of θ_L between a query's point "
			"and its answer's update) |\n", r->stale_median, r->stale_max);
	else
		fputs("| staleness | not in this trace (written before the column existed) |\n", m);
	if (r->have_psi)
		fprintf(m, "| ψ of model.json | %.6g (%sf = %.10g, f(θ*) = %.10g on %zu data file%s; "
			"the all-zero model has ψ = %.6g) |\n", r->psi,
			r->partial ? "a partial model; " : "", r->f, r->f_star, r->ndata,
			r->ndata == 1 ? "" : "s", r->psi_zero);
	else
		fputs("| ψ of model.json | not computed (give the owners' data files with `--data`) |\n",
		      m);
	if (r->nsnap > 0)
		fprintf(m, "| ψ the run reached | %.6g at k = %zu (%.3g s), %.6g at k = %zu (%.3g s): "
			"%zu snapshots of learnerd's model (`--snapshot-every`) on the same data |\n",
			r->snap_psi[0], r->snap_k[0], r->snap_s[0], r->snap_psi[r->nsnap - 1],
			r->snap_k[r->nsnap - 1], r->snap_s[r->nsnap - 1], r->nsnap);
	if (r->sim != NULL)
		fprintf(m, "| ψ simulated on this owner order | median %.6g, 25–75 %%: %.6g – %.6g at "
			"k = %zu over %zu runs (%s) |\n", r->sim_median, r->sim_p25, r->sim_p75,
			r->sim_k, r->sim_runs, r->sim);
}

static void learner_owners(FILE *m, const dp_report_learner *r)
{
	fputs("\n## Owners\n\n| owner | iterations | share | ε spent | RTT median (ms) | RTT p95 (ms) "
	      "| wait median (ms) | wait p95 (ms) |\n|---|---|---|---|---|---|---|---|\n", m);
	for (size_t i = 0; i < r->N; i++) {
		const dp_report_owner *o = &r->owners[i];

		fprintf(m, "| %s | %zu | %.1f %% | ", o->name, o->iterations,
			100.0 * (double)o->iterations / (double)r->iterations);
		if (isnan(o->eps))
			fputs("—", m);
		else
			fprintf(m, "%.6g", o->eps);
		fputs(" | ", m);
		put_ms2(m, o->rtt_median, o->rtt_p95, " | ");
		fputs(" | ", m);
		put_ms2(m, o->wait_median, o->wait_p95, " | ");
		fputs(" |\n", m);
	}
	if (r->nledgers > 0)
		fputs("\nε spent is the owner's ledger's figure, the ε charged (table below), for the "
		      "owners given with `--ledgers`; for the others it is", m);
	else
		fputs("\nε spent is", m);
	fputs(" the last `eps_spent` the owner reported in the trace (— when it served no "
	      "iteration); percentiles interpolate linearly between order statistics. "
	      "Rates count from the first query (the earliest `time_unix − rtt_s`), not from "
	      "the first request; `report.json` holds the same numbers.\n", m);
}

/* ε as text: "inf" for an unlimited (testing) ledger. */
static void put_eps(FILE *m, double v)
{
	if (isinf(v))
		fputs("inf", m);
	else
		fprintf(m, "%.9g", v);
}

/* The owners' ledgers given with --ledgers (docs/plots.md "ε charged"). */
static void learner_ledgers(FILE *m, const dp_report_learner *r)
{
	if (r->nledgers == 0)
		return;
	fputs("\n## ε charged (owners' ledgers)\n\n| owner | ledger | ε charged | ledger answers "
	      "| applied answers | ε_q | applied × ε_q | difference | why |\n"
	      "|---|---|---|---|---|---|---|---|---|\n", m);
	for (size_t i = 0; i < r->nledgers; i++) {
		const dp_report_ledger *l = &r->ledgers[i];

		fprintf(m, "| %s | %s | ", l->owner, l->dir);
		put_eps(m, l->spent);
		fprintf(m, " | %llu | %zu | ", (unsigned long long)l->answers, l->applied);
		put_eps(m, l->eps_q);
		fputs(" | ", m);
		put_eps(m, l->applied_eps);
		fputs(" | ", m);
		put_eps(m, l->extra);
		fprintf(m, " | %s |\n", l->why);
	}
	fputs("\nThe ledger's count holds the answers charged and the shares reserved ahead, one "
	      "ε_q each (docs/ledger.md §9); the trace's applied answers are the iterations that "
	      "used an answer of the owner.\n", m);
}

void dp_report_md_learner(FILE *m, const dp_report_learner *r)
{
	learner_context(m, r);
	learner_key_numbers(m, r);
	learner_owners(m, r);
	learner_ledgers(m, r);
	figs_md(m, r->figs, r->nfig);
	fputs("\n## Reproduce\n\n```\n", m);
	fputs(r->repro_plots, m);
	fputs("```\n\nψ against wall-clock time: simulate this run's owner order (data files in the "
	      "owners' natural order", m);
	if (r->N > 0)
		fprintf(m, ", %s first", r->owners[0].name);
	fputs(") and plot it against the trace:\n\n```\n", m);
	fputs(r->repro_sim, m);
	fputs("```\n", m);
}

void dp_report_md_sim(FILE *m, const dp_report_sim *r)
{
	fprintf(m, "# Run report: %s\n\ndpasync sim run · %s · seed %.0f\n\n", r->dir, r->note,
		(double)r->seed);
	fputs("## Key numbers\n\n| quantity | value |\n|---|---|\n", m);
	fprintf(m, "| ψ at k = T, mean over the runs | %.6g |\n", r->psi_mean);
	fprintf(m, "| ψ at k = T, median (25–75 %%) | %.6g (%.6g – %.6g) |\n", r->psi_median,
		r->psi_p25, r->psi_p75);
	fprintf(m, "| f(θ*) | %.10g |\n", r->f_star);
	if (r->have_eta)
		fprintf(m, "| η | %.6g |\n", r->eta);
	if (r->have_rho)
		fprintf(m, "| ρ | %.6g |\n", r->rho);
	if (r->have_c)
		fprintf(m, "| c | %.6g |\n", r->c);
	fprintf(m, "| λ, θ_max, Ξ | %g, %g, %g |\n", r->lambda, r->theta_max, r->clip);
	fputs("\n## Owners\n\n| owner | rows | ε |", m);
	if (r->have_sched)
		fputs(" iterations (first run) | share |", m);
	fputs(r->have_sched ? "\n|---|---|---|---|---|\n" : "\n|---|---|---|\n", m);
	for (size_t i = 0; i < r->N; i++) {
		const dp_report_sim_owner *o = &r->owners[i];

		fprintf(m, "| owner-%zu | %.0f | ", i + 1, o->rows);
		if (o->unlimited)
			fputs("∞", m);
		else
			fprintf(m, "%g", o->eps);
		if (r->have_sched)
			fprintf(m, " | %zu | %.1f %%", o->iterations,
				100.0 * (double)o->iterations / (double)r->sched_n);
		fputs(" |\n", m);
	}
	fputs("\nowner-j is the j-th data file given to `dpasync sim`.\n", m);
	figs_md(m, r->figs, r->nfig);
	fprintf(m, "\n## Reproduce\n\n```\n%s```\n", r->repro);
}
