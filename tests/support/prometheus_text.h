/* Checks of Prometheus' text exposition format (version 0.0.4) for the server's tests. */
#ifndef VKBERT_TEST_PROMETHEUS_TEXT_H
#define VKBERT_TEST_PROMETHEUS_TEXT_H

/* The value of the sample written exactly as `sample` (its name and labels, as rendered);
 * fails the test when there is none. */
double test_metric(const char *text, const char *sample);

/* Fails the test unless every line is a HELP or TYPE comment or `name{labels} value` with
 * valid names, escapes and values, each histogram's _bucket series has increasing bounds and
 * cumulative counts ending at le="+Inf", and its _count equals that last bucket. */
void test_check_exposition(const char *text);

#endif
