#include "cmds.h"
int dp_cmd_eval(int argc, char **argv)
{
	dp_tool_fail("eval", "not implemented yet");
	return 1;
}
