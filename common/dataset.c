/* dataset: to be written */
