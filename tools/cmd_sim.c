#include "cmds.h"
int dp_cmd_sim(int argc, char **argv)
{
	dp_tool_fail("sim", "not implemented yet");
	return 1;
}
