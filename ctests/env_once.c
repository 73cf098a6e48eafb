/*
 * env_once: the PAPI_HERITAGE_* variables are read once, at
 * PAPI_library_init, and checked (issue 15), seen through PAPI:
 *
 *   - PARAGON_RPM_MODEL=1 at init lets rpm_exp (no honest source anywhere)
 *     be added; a setenv of 0 afterwards changes nothing until
 *     papi_heritage_env_reread(), after which the add is refused;
 *   - a reread of an environment with a bad value returns PAPI_EINVAL,
 *     names the variable, and keeps the copy before whole;
 *   - at init, a bad value (PARAGON_RPM_MESH=3X3x) or a misspelt name
 *     (ALPHA21064_CLOK_MHZ) disables the component it concerns with the
 *     variable named, and no other.
 * Nothing here starts a set: it needs no mechanism.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "heritage_test.h"

static int add_rpm_exp(void)
{
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	int rc = PAPI_add_named_event(set, "paragon_rpm:::rpm_exp");
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	return rc;
}

static void init(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		exit(1);
	}
}

static const PAPI_component_info_t *component(const char *name)
{
	int cidx = PAPI_get_component_index(name);
	if (cidx < 0) {
		fprintf(stderr, "no %s component\n", name);
		exit(1);
	}
	return PAPI_get_component_info(cidx);
}

int main(void)
{
	unsetenv("PAPI_HERITAGE_PARAGON_RPM_MESH");
	setenv("PAPI_HERITAGE_PARAGON_RPM_MODEL", "1", 1);
	init();
	EXPECT_EQ("rpm_exp with MODEL=1 at init", add_rpm_exp(), PAPI_OK);

	setenv("PAPI_HERITAGE_PARAGON_RPM_MODEL", "0", 1);
	EXPECT_EQ("rpm_exp after a setenv of MODEL=0, not reread", add_rpm_exp(), PAPI_OK);
	CHECK_PAPI(papi_heritage_env_reread());
	EXPECT_EQ("rpm_exp after MODEL=0 is reread", add_rpm_exp(), PAPI_ENOSUPP);
	printf("MODEL=1 at init, 0 by setenv: still 1 until papi_heritage_env_reread, then 0\n");

	setenv("PAPI_HERITAGE_PARAGON_RPM_MODEL", "1", 1);
	setenv("PAPI_HERITAGE_PARAGON_RPM_MESH", "3X3x", 1);
	EXPECT_EQ("reread with MESH=3X3x", papi_heritage_env_reread(), PAPI_EINVAL);
	EXPECT(strcmp(papi_heritage_last_error(),
	              "PAPI_HERITAGE_PARAGON_RPM_MESH=3X3x: expected RxC, at most 1024 nodes") == 0,
	       "reason: '%s'", papi_heritage_last_error());
	printf("reread refused: %s\n", papi_heritage_last_error());
	EXPECT_EQ("rpm_exp after the refused reread (MODEL=1 not taken)", add_rpm_exp(), PAPI_ENOSUPP);
	PAPI_shutdown();

	/* At init: the bad value disables paragon_rpm, the misspelt name
	 * alpha21064; itanium2 is not concerned.  In a child: PAPI keeps a
	 * component that its init disabled disabled through PAPI_shutdown
	 * and the next PAPI_library_init, as it does any other. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("PAPI_HERITAGE_ALPHA21064_CLOK_MHZ", "150", 1);
		init();
		const PAPI_component_info_t *rpm = component("paragon_rpm"), *alpha = component("alpha21064"),
		                            *it2 = component("itanium2");
		EXPECT(rpm->disabled != PAPI_OK &&
		               strstr(rpm->disabled_reason, "PAPI_HERITAGE_PARAGON_RPM_MESH=3X3x: expected RxC") != NULL,
		       "paragon_rpm: disabled %d, '%s'", rpm->disabled, rpm->disabled_reason);
		EXPECT(alpha->disabled != PAPI_OK &&
		               strstr(alpha->disabled_reason,
		                      "PAPI_HERITAGE_ALPHA21064_CLOK_MHZ: no papi-heritage component reads it (did you "
		                      "mean PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ?)") != NULL,
		       "alpha21064: disabled %d, '%s'", alpha->disabled, alpha->disabled_reason);
		EXPECT(strstr(it2->disabled_reason, "PAPI_HERITAGE") == NULL, "itanium2: '%s'", it2->disabled_reason);
		EXPECT(add_rpm_exp() != PAPI_OK, "an event of the disabled paragon_rpm was added");
		printf("paragon_rpm disabled: %s\nalpha21064 disabled: %s\n", rpm->disabled_reason,
		       alpha->disabled_reason);
		fflush(stdout);
		_exit(heritage_test_failures ? 1 : 0);
	}
	int status = 0;
	EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the child that initialised with bad variables: status %#x", status);

	/* Mended: this process's PAPI_library_init takes them. */
	setenv("PAPI_HERITAGE_PARAGON_RPM_MESH", "3x3", 1);
	init();
	const PAPI_component_info_t *rpm = component("paragon_rpm");
	EXPECT(strstr(rpm->disabled_reason, "PAPI_HERITAGE") == NULL, "paragon_rpm: '%s'", rpm->disabled_reason);
	EXPECT(strstr(component("alpha21064")->disabled_reason, "PAPI_HERITAGE") == NULL, "alpha21064 still disabled");
	EXPECT_EQ("rpm_exp with MODEL=1 after the re-init", add_rpm_exp(), PAPI_OK);
	PAPI_shutdown();
	return heritage_test_done("env_once");
}
