// beast_names: Boost.Beast and Asio as skein's HTTP code (the server, the
// client, the OpenAI-compatible engine and embedder) names them: beast, bhttp,
// net and tcp inside namespace skein.
//
// Include it from .cpp files only, never from a header: it brings in Beast and
// Asio, which every header but a Beast user's own should stay free of.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace skein {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

}  // namespace skein
