"test.op"() {m = #rdu.mapping<grid = [4, 8], sections = 1, stages = [[0, 0, 0, 2, 1]], buffers = [[0, 0, 0, 3], [1, 0, 3, 14]]>} : () -> ()
