package org.apache.iceberg.rest;

import java.lang.reflect.Method;
import java.util.Map;

import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Apache Iceberg's RESTCatalogServer (from the iceberg-open-api test
 * fixtures), served on the loopback interface only.
 *
 * RESTCatalogServer.main listens on every interface; floe's tests want
 * 127.0.0.1.  This starts the very same pieces: the fixture's backend catalog
 * (configured from CATALOG_* environment variables by the fixture itself),
 * its RESTServerCatalogAdapter, Iceberg's RESTCatalogServlet and the gzip
 * handler, on a connector bound to 127.0.0.1:CATALOG_REST_PORT.  It prints
 * "listening on PORT" once the server accepts connections.
 */
public final class LoopbackRESTCatalogServer {
    private LoopbackRESTCatalogServer() {}

    public static void main(String[] args) throws Exception {
        RESTCatalogServer fixture = new RESTCatalogServer();
        Method init = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
        init.setAccessible(true);
        RESTCatalogServer.CatalogContext ctx = (RESTCatalogServer.CatalogContext) init.invoke(fixture);
        RESTCatalogAdapter adapter = new RESTServerCatalogAdapter(ctx);
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
        CompressionHandler gzip = new CompressionHandler();
        gzip.putCompression(new GzipCompression());
        context.insertHandler(gzip);

        Map<String, String> conf = RCKUtils.environmentCatalogConfig();
        int port = Integer.parseInt(conf.getOrDefault(RESTCatalogServer.REST_PORT, "8181"));
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        server.addConnector(connector);
        server.setHandler(context);
        server.start();
        System.out.println("listening on " + connector.getLocalPort());
        System.out.flush();
        server.join();
    }
}
