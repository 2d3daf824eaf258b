/* conn: to be written */
