/* wait_cost.c — bench helper (build/bench/strata-wait-cost): two threads hand a turn
 * back and forth through one condition variable, in alternating runs that wait with
 * pthread_cond_wait and with pthread_cond_timedwait (a 5 ms deadline, as the engine's
 * batch timer sets), and print the time per wait of each. The difference is what
 * arming and cancelling a timer adds to every wait: why only one engine worker waits
 * with a timeout (engine/net.c, wait_for_work). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "clock.h"

#define HANDOFFS 50000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int turn, timed;


/* Waits for the turn `me`, hands it to the other thread, HANDOFFS times. */
static void *play(void *arg)
{
	int me = (int)(long)arg;

	for (int i = 0; i < HANDOFFS; i++) {
		pthread_mutex_lock(&lock);
		while (turn != me) {
			if (timed) {
				unsigned long long due = clock_mono_ns() + 5000000;
				struct timespec ts = { (time_t)(due / 1000000000), (long)(due % 1000000000) };

				pthread_cond_timedwait(&cv, &lock, &ts);
			} else {
				pthread_cond_wait(&cv, &lock);
			}
		}
		turn = !me;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 6;
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);
	for (int r = 0; r < 2 * rounds; r++) {
		pthread_t t;
		unsigned long long t0 = clock_mono_ns();

		timed = r & 1;
		turn = 0;
		pthread_create(&t, NULL, play, (void *)1L);
		play((void *)0L);
		pthread_join(t, NULL);
		printf("%s %.0f\n", timed ? "timed" : "plain", (double)(clock_mono_ns() - t0) / (2.0 * HANDOFFS));
	}
	return 0;
}
