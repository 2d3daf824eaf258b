#include "cmds.h"
int dp_cmd_certs(int argc, char **argv)
{
	dp_tool_fail("certs", "not implemented yet");
	return 1;
}
