/*
 * km_gpr_internal.h - what Gaussian-process regression's files share
 * (km_gpr.c: checks, the likelihood and its optimizer, the exact fit,
 * payload and descriptor; km_gpr_nys.c: the nystrom solver, its update
 * and its sums' file form;
 * km_gpr_model.c: what both solvers build the model with;
 * km_gpr_predict.c: predictions, variances, covariances): the payload,
 * the hyperparameters' order and what the optimizer found. Not installed;
 * core/algorithms only.
 */
#ifndef KM_GPR_INTERNAL_H
#define KM_GPR_INTERNAL_H

#include "km_algorithms_internal.h"


/* Two forms: exact (the training rows, a and the factor of K) and
 * nystrom (the centres, their coefficients and, with params.variance,
 * the two factors of the DTC variance). A nystrom model with the sums
 * of params.keep_factor is written as the file form GPR_FORM_NYS_SUMS
 * (format version 11) and read back as the nystrom form with G set. */
enum { GPR_FORM_EXACT = 0, GPR_FORM_NYSTROM = 1, GPR_FORM_NYS_SUMS = 2,
       GPR_FORM_COUNT };

typedef struct gpr_payload {
    unsigned form;         /* GPR_FORM_* */
    double signal, noise;  /* s and the noise of K = s k + noise I */
    double y_mean, y_std;  /* normalize_y's; else 0 and 1 */
    double *X;             /* n x d training rows (nystrom: the m centres) */
    double *coef;          /* n: a = K^-1 y' (nystrom: c / s, c krr's
                              coefficients of the SoR mean) */
    km_factor *F;          /* exact: K = L L^T (shared with the models
                              updated from this one); nystrom: NULL */
    double *L;             /* nystrom: K_mm's factor (m x m row-major
                              lower, upper 0), or NULL without the
                              variance; exact: NULL */
    double *C;             /* nystrom with the variance: m x m lower,
                              C C^T = alpha I + Phi^T Phi; else NULL */
    double *xn;            /* derived: squared norms of X's rows */
    double *w;             /* derived: s y_std a, the mean's weights */
    /* nystrom with params.keep_factor: the sums an update needs over the
     * rows seen, y' their targets in this payload's normalisation
     * (y_mean, y_std): G = K_nm^T K_nm (m x m, both triangles), Kt =
     * K_nm^T [y' 1] (m x 2 row-major), sy = sum y', syy = sum y'^2; with
     * the variance also P = Phi^T Phi (m x m lower, upper 0; Phi = K_nm
     * L^-T) and Pt = Phi^T [y' 1] (m x 2). Else NULL (P and Pt also
     * without the variance). */
    double *G, *Kt, *P, *Pt;
    double sy, syy;
    uint64_t rows;
} gpr_payload;

/* The hyperparameters' order in theta and in gradients. */
enum { TH_SIGNAL = 0, TH_GAMMA = 1, TH_NOISE = 2, TH_COUNT = 3 };

/* What the optimizer found. */
typedef struct gpr_optimum {
    double h[TH_COUNT];   /* the best start's hyperparameters */
    double lml;           /* and its likelihood */
    double initial_lml;   /* at the first start; NAN if not factored */
    size_t iterations, starts;
} gpr_optimum;

/* km_gpr_model.c. krr's nystrom params for gpr's mean (the SoR mean of
 * s k + noise I is KRR on k with alpha = noise / s); y' = y, or (y -
 * mean) / std with normalize_y (km_gpr_normalise); a payload's release,
 * and its derived arrays (X's norms and the mean's weights); the
 * epilogue of both solvers (km_gpr_finish: the model around pl, owned
 * from here, also on failure; its figures, and the nystrom solver's with
 * cg its iterations and residual; progress 1; *out). */
km_krr_params km_gpr_mean_params(const km_gpr_params *p);
/* The mean and population standard deviation (*sd, 0 when all equal)
 * of n values of mean m1 and population variance v1 together with the k
 * values a y[i] + b (pooled moments: an update's targets with the rows
 * it adds to). */
void km_gpr_pooled(double n, double m1, double v1, const double *y, size_t k,
                   double a, double b, double *mean, double *sd);
void km_gpr_normalise(const double *y, size_t n, int normalize, double *out,
                      double *mean, double *std);
void km_gpr_payload_free(void *payload);
km_status km_gpr_derive(gpr_payload *p, size_t n, size_t d);
km_status km_gpr_finish(km_fit_frame *f, size_t d, size_t n,
                        gpr_payload *pl, const km_gpr_params *params,
                        double lml, const gpr_optimum *o, const double *cg,
                        const km_fit_control *ctl, km_model **out,
                        km_error *err);

/* The descriptor's coefs hook (km_gpr_model.c). */
size_t km_gpr_coefs(const km_model *m, km_coef *out);

/* The descriptor's update entry (km_gpr_model.c). */
extern const km_algo_update km_gpr_update;

/* km_gpr_nys.c: the update of a nystrom model that keeps its sums (the
 * update entry's for that form; km_gpr_model.c's comment on updates)
 * and its peak bytes beyond the model for k new rows. */
km_status km_gpr_nys_update(const km_model *m, const double *X, size_t k,
                            const double *y, const km_fit_control *ctl,
                            km_model **out, km_error *err);
size_t km_gpr_nys_update_bytes(const km_model *m, size_t k);
/* km_gpr_nys.c: the sums' part of the file form 2 (format version 11,
 * after the factors): written; read into p of m centres (r->failed or
 * NULL members on failure); KM_ECORRUPT unless they could be a fit's. */
void km_gpr_save_sums(const gpr_payload *p, size_t m, km_writer *w);
void km_gpr_read_sums(km_reader *r, gpr_payload *p, size_t m);
km_status km_gpr_check_sums(const gpr_payload *p, size_t m, km_error *err);

#endif /* KM_GPR_INTERNAL_H */
